// Package bedrock registers the "bedrock" model provider (Converse, on the
// app's AWS config) with a program:
// host.Config{Providers: []host.Provider{bedrock.Provider()}}. Only a
// program that imports it links the Bedrock runtime SDK.
package bedrock

import (
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/provider/bedrock"
)

// Provider is the "bedrock" provider.
func Provider() app.Provider {
	return app.ProviderOf("bedrock", func(cfg aws.Config, _ *http.Client, c agents.Config, _ string) (*bedrock.Model, error) {
		return bedrock.New(bedrockruntime.NewFromConfig(cfg), bedrock.Config{Model: c.Model, MaxTokens: c.MaxOutputTokens})
	})
}

// Config configures a Model for an agent written in Go.
type Config = bedrock.Config

// Model is a model of the provider, for Agent.Model.
type Model = bedrock.Model

// New returns a Model for c.
func New(client *bedrockruntime.Client, c Config) (*Model, error) { return bedrock.New(client, c) }
