package app

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/baton-run/baton/internal/auth"

	"github.com/baton-run/baton/internal/operator"
	"github.com/baton-run/baton/internal/tick"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/internal/worker"
)

// The parts below are what the three functions and the dev server run.
// They are built here, once, so a function and the dev server cannot wire
// them differently.

// Worker returns the resume worker: it takes wakes and starts, resumes or
// skips turns.
func (a *App) Worker() *worker.Worker {
	w := &worker.Worker{Sessions: a.Sessions, Runner: a.Runner, Log: a.Log, Metrics: a.Metrics}
	if a.Clients != nil && a.Resources.QueueURL != "" {
		// A wake its handler could not finish comes back after a short
		// backoff, not the queue's visibility timeout.
		w.GiveBack = wake.NewSQS(a.Clients.SQS, a.Resources.QueueURL).GiveBack
	}
	return w
}

// Tick returns the tick: it reaps dead invocations, expires approvals and
// re-sends wakes lost for longer than Resources.WakeGrace. Its clock is the
// session store's.
func (a *App) Tick() *tick.Tick {
	return &tick.Tick{Sessions: a.Sessions, Waker: a.Waker, Grace: a.Resources.WakeGrace, Now: a.Sessions.Clock, Log: a.Log, Metrics: a.Metrics}
}

// Retention returns the retention sweep the environment configures
// (BATON_RETENTION_DAYS).
func (a *App) Retention() *tick.Retention {
	return &tick.Retention{Sessions: a.Sessions, After: a.Resources.Retention(), Log: a.Log}
}

// Operator returns the operator HTTP API with its chat endpoint. identity
// names the caller of a request (nil reads it from the request's context,
// operator.WithIdentity); hold is how long a stream read may wait for new
// parts (0 answers at once); chatAgent serves chats that name no agent when
// BATON_CHAT_AGENT is unset.
func (a *App) Operator(identity func(*http.Request) (string, bool), hold time.Duration, chatAgent string) http.Handler {
	return operator.New(operator.Config{Sessions: a.Sessions, Agents: a.Agents.Has, Identity: identity, StreamHold: hold,
		Chat: a.Resources.chatOptions(chatAgent), Log: a.Log, MCP: a.MCP(identity, hold)})
}

// Verifier returns the verifier of callers' bearer JWTs the environment
// configures (BATON_JWT_ISSUER, BATON_JWT_AUDIENCE, BATON_JWKS_URL); an
// error when either of the first two is unset.
func (a *App) Verifier() (*auth.Verifier, error) {
	v, err := auth.New(auth.Config{Issuer: a.Resources.JWTIssuer, Audience: a.Resources.JWTAudience, JWKSURL: a.Resources.JWKSURL, Log: a.Log})
	if err != nil {
		return nil, fmt.Errorf("app: %s and %s: %w", EnvJWTIssuer, EnvJWTAudience, err)
	}
	return v, nil
}

// AgentNames are the names of the App's agents, sorted.
func (a *App) AgentNames() []string { return slices.Sorted(maps.Keys(a.Agents)) }
