// Package openai registers the "openai" model provider (OpenAI-compatible Chat
// Completions: OpenAI, vLLM, Ollama) with a program:
// host.Config{Providers: []host.Provider{openai.Provider()}}.
// Only a program that imports it links the OpenAI SDK.
package openai

import (
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/provider/openai"
)

// Provider is the "openai" provider.
func Provider() app.Provider {
	return app.ProviderOf("openai", func(_ aws.Config, hc *http.Client, c agents.Config, key string) (*openai.Model, error) {
		return openai.New(openai.Config{Model: c.Model, MaxTokens: c.MaxOutputTokens, APIKey: key, BaseURL: c.BaseURL,
			EchoReasoning: c.EchoReasoning, HTTPClient: hc})
	})
}

// Config configures a Model for an agent written in Go.
type Config = openai.Config

// Model is a model of the provider, for Agent.Model.
type Model = openai.Model

// New returns a Model for c.
func New(c Config) (*Model, error) { return openai.New(c) }
