package baton

import (
	"net/http"
	"time"

	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/tick"
	"github.com/baton-run/baton/internal/worker"
	"github.com/baton-run/baton/pkg/turn"
)

// The parts below are what the handlers run, for a program that runs them
// itself: the dev server serves Operator and polls the queue into Worker;
// batontest drives Sessions, Worker and Tick, on a clock of its own
// (Sessions().Now).

// Sessions is the App's session store, the one way into its facts and
// turn streams.
func (a *App) Sessions() *session.Store { return a.a.Sessions }

// Runner is the App's turn runner: it starts and resumes turns.
func (a *App) Runner() *turn.Runner { return a.a.Runner }

// Worker is the resume function's worker: it takes wakes and starts,
// resumes or skips turns.
func (a *App) Worker() *worker.Worker { return a.a.Worker() }

// Tick is the tick function's tick: it reaps dead invocations, expires
// approvals and re-sends lost wakes, on the session store's clock.
func (a *App) Tick() *tick.Tick { return a.a.Tick() }

// Operator is the operator HTTP API with its chat endpoint, behind no
// door: identity names a request's caller (nil reads it from the request's
// context, operator.WithIdentity), hold is how long a stream read may wait
// for new parts (0 answers at once), and chatAgent serves chats that name
// no agent when BATON_CHAT_AGENT is unset.
func (a *App) Operator(identity func(*http.Request) (string, bool), hold time.Duration, chatAgent string) http.Handler {
	return a.a.Operator(identity, hold, chatAgent)
}

// AgentNames are the names of the App's agents, sorted.
func (a *App) AgentNames() []string { return a.a.AgentNames() }
