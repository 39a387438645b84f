package session

import (
	"context"
	"log/slog"
	"time"

	kids "github.com/baton-run/baton/internal/children"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

// Child sessions live in internal/children; this is the store's wiring of
// them: their type, embedded in Store, and its core as they reach it.

// children are the store's child sessions (kids.Store), over its core; a
// cascade cancels and answers through the operator's operations.
type children = kids.Store

// WakeChildEnded is the wake of a parent a child's end was delivered to
// (lifecycle.go's too).
const WakeChildEnded = kids.WakeChildEnded

// ParentActor is who cancels a child its parent no longer waits for
// (kids.ParentActor), as the tests outside read it.
var ParentActor = kids.ParentActor

// newChildren is the children of a store over core c and its operations;
// root is the store without a receipt.
func newChildren(c *core, o *ops, root *Store) children {
	var top *kids.Store
	if root != nil {
		top = &root.children
	}
	return kids.New(childCore{core: c, ops: o}, kids.Errors{NotFound: ErrNotFound, NoTurn: ErrNoTurn}, top)
}

// childCore is the store's core as the children reach it (kids.Core).
type childCore struct {
	*core
	ops *ops
}

func (c childCore) Load(ctx context.Context, id string) (reducer.State, []conversation.Message, error) {
	sess, err := c.core.Load(ctx, id)
	if err != nil {
		return reducer.State{}, nil, err
	}
	return sess.State, sess.History, nil
}

func (c childCore) Transition(ctx context.Context, id string, next func(reducer.State) (reducer.Fact, error)) (reducer.State, error) {
	return c.transition(ctx, id, next)
}

func (c childCore) Retry(ctx context.Context, f func() error) error { return c.retry(ctx, f) }

func (c childCore) Wake(ctx context.Context, id string, reason wake.Reason, seq int64, delay time.Duration) {
	c.wake(ctx, id, reason, seq, delay)
}

func (c childCore) Log() *slog.Logger { return c.log() }

func (c childCore) Cancel(ctx context.Context, id string, actor reducer.Actor, reason string) error {
	return c.ops.Cancel(ctx, id, actor, reason)
}

func (c childCore) Answer(ctx context.Context, id string, actor reducer.Actor, a reducer.Answer) error {
	return c.ops.Answer(ctx, id, actor, a)
}
