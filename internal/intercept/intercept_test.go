package intercept_test

import (
	"context"
	"slices"
	"testing"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/intercept"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/streams"
)

// TestOrder: the first interceptor is the outermost, and one that wraps
// nothing of a kind is skipped; with none wrapping a kind the chain is nil,
// so the runner calls directly.
func TestOrder(t *testing.T) {
	var order []string
	named := func(name string) intercept.Interceptor {
		return intercept.Interceptor{Tool: func(next intercept.ToolFunc) intercept.ToolFunc {
			return func(ctx context.Context, c intercept.ToolCall) ([]byte, error) {
				order = append(order, name+">")
				defer func() { order = append(order, "<"+name) }()
				return next(ctx, c)
			}
		}}
	}
	ics := []intercept.Interceptor{named("a"), {}, named("b")}
	f := intercept.Tool(ics, func(context.Context, intercept.ToolCall) ([]byte, error) {
		order = append(order, "tool")
		return []byte(`"ok"`), nil
	})
	if out, err := f(context.Background(), intercept.ToolCall{}); err != nil || string(out) != `"ok"` {
		t.Fatalf("chain: %s %v", out, err)
	}
	if want := []string{"a>", "b>", "tool", "<b", "<a"}; !slices.Equal(order, want) {
		t.Errorf("order %q, want %q", order, want)
	}
	if intercept.Model(ics, nil) != nil || intercept.Steps(ics, nil) != nil || intercept.Tool(nil, f) != nil {
		t.Error("a kind no interceptor wraps has a chain")
	}
}

type named struct {
	session.FactLog
	name string
}

// TestStore: store decorators apply in the same order, and a list with
// none leaves the store itself.
func TestStore(t *testing.T) {
	base := session.New(dynamo.New(nil, "t"), streams.New(nil, "b"))
	if got := intercept.Store(base, []intercept.Interceptor{{}}); got != base {
		t.Error("no decorator, yet a new store")
	}
	var seen []string
	deco := func(name string) intercept.Interceptor {
		return intercept.Interceptor{Facts: func(next session.FactLog) session.FactLog {
			if n, ok := next.(named); ok {
				seen = append(seen, name+" wraps "+n.name)
			} else {
				seen = append(seen, name+" wraps the log")
			}
			return named{next, name}
		}}
	}
	if got := intercept.Store(base, []intercept.Interceptor{deco("a"), deco("b")}); got == base {
		t.Fatal("decorated store is the base")
	}
	if want := []string{"b wraps the log", "a wraps b"}; !slices.Equal(seen, want) {
		t.Errorf("decorated %q, want %q", seen, want)
	}
}

// seenBroker records the Acquire calls that pass it, under its name.
type seenBroker struct {
	claims.Broker
	name string
	log  *[]string
}

func (b seenBroker) Acquire(ctx context.Context, req claims.Request) (claims.Admission, error) {
	*b.log = append(*b.log, b.name+":"+req.ID)
	return b.Broker.Acquire(ctx, req)
}

type grantAll struct{ claims.Broker }

func (grantAll) Acquire(_ context.Context, req claims.Request) (claims.Admission, error) {
	return claims.Admission{Outcome: claims.Granted}, nil
}

// TestClaimsDecoratesTheBroker: every interceptor's Claims sees a broker
// call, the first outermost; with none, the broker is returned as it is.
func TestClaimsDecoratesTheBroker(t *testing.T) {
	t.Parallel()
	var log []string
	see := func(name string) intercept.Interceptor {
		return intercept.Interceptor{Claims: func(next claims.Broker) claims.Broker { return seenBroker{next, name, &log} }}
	}
	var base claims.Broker = grantAll{}
	if got := intercept.Claims(base, []intercept.Interceptor{{}, {}}); got != base {
		t.Fatalf("no Claims decorator, yet the broker changed: %T", got)
	}
	b := intercept.Claims(base, []intercept.Interceptor{see("a"), {}, see("b")})
	adm, err := b.Acquire(context.Background(), claims.Request{ID: "r1"})
	if err != nil || adm.Outcome != claims.Granted {
		t.Fatalf("acquire through the decorators: %+v %v", adm, err)
	}
	if !slices.Equal(log, []string{"a:r1", "b:r1"}) {
		t.Fatalf("calls seen %v, want a (outermost) then b", log)
	}
}
