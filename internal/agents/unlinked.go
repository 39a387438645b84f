package agents

import (
	"context"
	"fmt"
	"iter"

	"github.com/baton-run/baton/internal/model"
)

// ProviderNames are the providers baton ships (see package
// github.com/baton-run/baton/providers). An agent may name one that its
// program does not register: the agent is built for its policies, and its
// model refuses to run (UnlinkedError). The operator and the tick run no
// model and link no provider; the resume function registers the providers
// its agents use.
func ProviderNames() []string { return []string{"anthropic", "bedrock", "openai"} }

// UnlinkedError is the error of an agent's model whose provider the
// program did not register.
type UnlinkedError struct{ Provider string }

func (e *UnlinkedError) Error() string {
	return fmt.Sprintf("agents: provider %q is not registered in this program: add it to host.Config.Providers (providers.All() registers every provider)", e.Provider)
}

// unlinked is the model of an agent whose provider is not registered.
type unlinked struct{ name string }

func (u unlinked) Stream(context.Context, model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		yield(model.Event{}, &UnlinkedError{Provider: u.name})
	}
}
