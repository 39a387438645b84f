// Package providers registers baton's model providers with a program:
//
//	baton.New(ctx, baton.Config{Providers: providers.All()})
//
// A program links only the providers it names here, so a function that
// runs no model (the operator, the tick) passes none and links no provider
// SDK. An agent file that names a provider its program did not register
// still loads; that agent's turns fail with agents.UnlinkedError.
package providers

import (
	"context"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/baton-run/baton/pkg/agents"
	"github.com/baton-run/baton/pkg/app"
	"github.com/baton-run/baton/pkg/awsenv"
	"github.com/baton-run/baton/pkg/model"
	"github.com/baton-run/baton/pkg/provider/anthropic"
	"github.com/baton-run/baton/pkg/provider/bedrock"
	"github.com/baton-run/baton/pkg/provider/openai"
)

// All is every provider baton ships: anthropic, bedrock and openai.
func All() []app.Provider { return []app.Provider{Anthropic(), Bedrock(), OpenAI()} }

// Anthropic is the "anthropic" provider (the Messages API).
func Anthropic() app.Provider {
	return app.Provider{Name: "anthropic", Build: func(_ *awsenv.Clients, hc *http.Client) agents.Provider {
		return func(_ context.Context, c agents.Config, key string) (model.Model, error) {
			return built(anthropic.New(anthropic.Config{Model: c.Model, MaxTokens: c.MaxOutputTokens, APIKey: key, BaseURL: c.BaseURL, HTTPClient: hc}))
		}
	}}
}

// OpenAI is the "openai" provider (the Responses API).
func OpenAI() app.Provider {
	return app.Provider{Name: "openai", Build: func(_ *awsenv.Clients, hc *http.Client) agents.Provider {
		return func(_ context.Context, c agents.Config, key string) (model.Model, error) {
			return built(openai.New(openai.Config{Model: c.Model, MaxTokens: c.MaxOutputTokens, APIKey: key, BaseURL: c.BaseURL,
				EchoReasoning: c.EchoReasoning, HTTPClient: hc}))
		}
	}}
}

// Bedrock is the "bedrock" provider (Converse, on the app's AWS config).
func Bedrock() app.Provider {
	return app.Provider{Name: "bedrock", Build: func(clients *awsenv.Clients, _ *http.Client) agents.Provider {
		return func(_ context.Context, c agents.Config, _ string) (model.Model, error) {
			return built(bedrock.New(bedrockruntime.NewFromConfig(clients.Config), bedrock.Config{Model: c.Model, MaxTokens: c.MaxOutputTokens}))
		}
	}}
}

// built returns m as a model.Model, or nil (not a typed nil) with err.
func built[M model.Model](m M, err error) (model.Model, error) {
	if err != nil {
		return nil, err
	}
	return m, nil
}
