// Package anthropic registers the "anthropic" model provider (the Messages
// API) with a program: baton.Config{Providers: []baton.Provider{anthropic.Provider()}}.
// Only a program that imports it links the Anthropic SDK.
package anthropic

import (
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/baton-run/baton/pkg/agents"
	"github.com/baton-run/baton/pkg/app"
	"github.com/baton-run/baton/pkg/provider/anthropic"
)

// Provider is the "anthropic" provider.
func Provider() app.Provider {
	return app.ProviderOf("anthropic", func(_ aws.Config, hc *http.Client, c agents.Config, key string) (*anthropic.Model, error) {
		return anthropic.New(anthropic.Config{Model: c.Model, MaxTokens: c.MaxOutputTokens, APIKey: key, BaseURL: c.BaseURL, HTTPClient: hc})
	})
}
