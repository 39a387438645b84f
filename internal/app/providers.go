package app

import (
	"context"
	"github.com/baton-run/baton/internal/guard"
	"github.com/baton-run/baton/internal/guard/declared"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/apikey"
	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/internal/tool/remote"
)

// Provider is a model provider agents may name (their "provider" field).
// Package github.com/baton-run/baton/providers has baton's: a program
// registers the ones its agents use, so a function that runs no model (the
// operator, the tick) links none.
type Provider struct {
	// Name is what an agent's "provider" field says.
	Name string
	// Build makes the provider on the app's AWS configuration and the HTTP
	// client model calls share.
	Build func(cfg aws.Config, httpClient *http.Client) agents.Provider
}

// KeyStore makes the secret store agents' keys are fetched from
// (apikey.Fetcher) on the app's AWS configuration. providers.KeyStore() is
// baton's, on Secrets Manager and SSM Parameter Store: only a program that
// registers it (the resume function, the dev server) links those clients.
type KeyStore func(cfg aws.Config) apikey.Fetcher

// Lambda makes, on the app's AWS configuration, what invokes the agent file's
// lambda tools (kind "lambda"). Package providers/awslambda has baton's,
// on the AWS SDK's Lambda client: only a program that runs tools (the
// resume function) registers it, so the operator and the tick link no
// Lambda client. Without one, an agent with lambda tools still loads, and
// a call of such a tool fails the turn (remote.ErrNoLambdaInvoker).
type Lambda func(cfg aws.Config) remote.LambdaInvoker

// Deps are the providers and declared tools agents may use. A provider's
// transient faults are the turn runner's to ride out, under each agent's
// limits.modelRetry: a failed step is redone within the step's time, and a
// model that stays unavailable suspends the turn. An agent that names one
// of baton's providers that ps does not hold is built with a model that
// refuses to run (agents.UnlinkedError). lambda nil means no lambda tool
// can run.
func Deps(clients *awsenv.Clients, ps []Provider, lambda Lambda) agents.Deps {
	httpClient := &http.Client{Timeout: 5 * time.Minute}
	var invoker remote.LambdaInvoker
	if lambda != nil {
		invoker = lambda(clients.Config)
	}
	d := agents.Deps{
		// wait_until is every agent's to name.
		Builtins:  []tool.Tool{tool.WaitUntil()},
		Providers: map[string]agents.Provider{},
		Declared:  agents.DeclaredTools(invoker, httpClient),
		Guardrails: func(g declared.Decl) (guard.Guardrail, error) {
			return g.Build(httpClient, invoker)
		},
	}
	for _, p := range ps {
		d.Providers[p.Name] = p.Build(clients.Config, httpClient)
	}
	return d
}

// ProviderOf is the Provider name whose model for an agent's config and
// key newModel makes, on the app's AWS configuration and the HTTP client model
// calls share: the one adapter of every provider package. A model that
// fails to build is a nil model.Model with the error, never a typed nil.
func ProviderOf[M model.Model](name string, newModel func(cfg aws.Config, hc *http.Client, c agents.Config, key string) (M, error)) Provider {
	return Provider{Name: name, Build: func(cfg aws.Config, hc *http.Client) agents.Provider {
		return func(_ context.Context, c agents.Config, key string) (model.Model, error) {
			m, err := newModel(cfg, hc, c, key)
			if err != nil {
				return nil, err
			}
			return m, nil
		}
	}}
}
