// Package bedrock registers the "bedrock" model provider (Converse, on the
// app's AWS config) with a program:
// baton.Config{Providers: []baton.Provider{bedrock.Provider()}}. Only a
// program that imports it links the Bedrock runtime SDK.
package bedrock

import (
	"context"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/baton-run/baton/pkg/agents"
	"github.com/baton-run/baton/pkg/app"
	"github.com/baton-run/baton/pkg/awsenv"
	"github.com/baton-run/baton/pkg/model"
	"github.com/baton-run/baton/pkg/provider/bedrock"
)

// Provider is the "bedrock" provider.
func Provider() app.Provider {
	return app.Provider{Name: "bedrock", Build: func(clients *awsenv.Clients, _ *http.Client) agents.Provider {
		return func(_ context.Context, c agents.Config, _ string) (model.Model, error) {
			m, err := bedrock.New(bedrockruntime.NewFromConfig(clients.Config), bedrock.Config{Model: c.Model, MaxTokens: c.MaxOutputTokens})
			if err != nil {
				return nil, err
			}
			return m, nil
		}
	}}
}
