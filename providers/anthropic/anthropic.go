// Package anthropic registers the "anthropic" model provider (the Messages
// API) with a program: host.Config{Providers: []host.Provider{anthropic.Provider()}}.
// Only a program that imports it links the Anthropic SDK.
package anthropic

import (
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/provider/anthropic"
)

// Provider is the "anthropic" provider.
func Provider() app.Provider {
	return app.ProviderOf("anthropic", func(_ aws.Config, hc *http.Client, c agents.Config, key string) (*anthropic.Model, error) {
		return anthropic.New(anthropic.Config{Model: c.Model, MaxTokens: c.MaxOutputTokens, APIKey: key, BaseURL: c.BaseURL, HTTPClient: hc})
	})
}

// Config configures a Model for an agent written in Go.
type Config = anthropic.Config

// Model is a model of the provider, for Agent.Model.
type Model = anthropic.Model

// New returns a Model for c.
func New(c Config) (*Model, error) { return anthropic.New(c) }
