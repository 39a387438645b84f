package app

import (
	"context"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/baton-run/baton/pkg/agents"
	"github.com/baton-run/baton/pkg/awsenv"
	"github.com/baton-run/baton/pkg/model"
	"github.com/baton-run/baton/pkg/provider/anthropic"
	"github.com/baton-run/baton/pkg/provider/bedrock"
	"github.com/baton-run/baton/pkg/provider/openai"
	"github.com/baton-run/baton/pkg/tool"
)

// Deps are the providers and declared tools agents may use. A provider's
// transient faults are the turn runner's to ride out, under each agent's
// limits.modelRetry: a failed step is redone within the step's time, and a
// model that stays unavailable suspends the turn.
func Deps(clients *awsenv.Clients) agents.Deps {
	httpClient := &http.Client{Timeout: 5 * time.Minute}
	return agents.Deps{
		// wait_until is every agent's to name.
		Builtins: []tool.Tool{tool.WaitUntil()},
		Providers: map[string]agents.Provider{
			"anthropic": func(_ context.Context, c agents.Config, key string) (model.Model, error) {
				m, err := anthropic.New(anthropic.Config{Model: c.Model, MaxTokens: c.MaxOutputTokens, APIKey: key, BaseURL: c.BaseURL, HTTPClient: httpClient})
				if err != nil {
					return nil, err
				}
				return m, nil
			},
			"openai": func(_ context.Context, c agents.Config, key string) (model.Model, error) {
				m, err := openai.New(openai.Config{Model: c.Model, MaxTokens: c.MaxOutputTokens, APIKey: key, BaseURL: c.BaseURL,
					EchoReasoning: c.EchoReasoning, HTTPClient: httpClient})
				if err != nil {
					return nil, err
				}
				return m, nil
			},
			"bedrock": func(_ context.Context, c agents.Config, _ string) (model.Model, error) {
				m, err := bedrock.New(bedrockruntime.NewFromConfig(clients.Config), bedrock.Config{Model: c.Model, MaxTokens: c.MaxOutputTokens})
				if err != nil {
					return nil, err
				}
				return m, nil
			},
		},
		Declared: agents.DeclaredTools(lambda.NewFromConfig(clients.Config), httpClient),
	}
}
