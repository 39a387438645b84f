// Package bedrock registers the "bedrock" model provider (Converse, on the
// app's AWS config) with a program:
// baton.Config{Providers: []baton.Provider{bedrock.Provider()}}. Only a
// program that imports it links the Bedrock runtime SDK.
package bedrock

import (
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/baton-run/baton/pkg/agents"
	"github.com/baton-run/baton/pkg/app"
	"github.com/baton-run/baton/pkg/provider/bedrock"
)

// Provider is the "bedrock" provider.
func Provider() app.Provider {
	return app.ProviderOf("bedrock", func(cfg aws.Config, _ *http.Client, c agents.Config, _ string) (*bedrock.Model, error) {
		return bedrock.New(bedrockruntime.NewFromConfig(cfg), bedrock.Config{Model: c.Model, MaxTokens: c.MaxOutputTokens})
	})
}
