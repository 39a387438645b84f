package otel

import (
	"context"
	"encoding/binary"
	"math/rand/v2"

	"go.opentelemetry.io/otel/trace"

	"github.com/baton-run/baton/internal/traceparent"
)

// ids is the provider's ID generator: random ids, except for the root span
// of a trace baton minted (intercept.Run.Root), which takes the ids the
// turn's traceparent names, so that the turn's later runs, children of
// that span, are not orphans in a trace view.
type ids struct{}

type rootKey struct{}

// asRoot is ctx under which the next new-root span takes tp's ids; ctx
// itself when tp does not parse.
func asRoot(ctx context.Context, tp string) context.Context {
	p, err := traceparent.Parse(tp)
	if err != nil {
		return ctx
	}
	return context.WithValue(ctx, rootKey{}, trace.NewSpanContext(trace.SpanContextConfig{TraceID: p.TraceID, SpanID: p.SpanID}))
}

// NewIDs is the ids of a span with no parent.
func (ids) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if sc, ok := ctx.Value(rootKey{}).(trace.SpanContext); ok {
		return sc.TraceID(), sc.SpanID()
	}
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.BigEndian.PutUint64(tid[:8], rand.Uint64())
		binary.BigEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return tid, newSpanID()
}

// NewSpanID is the id of a span in trace traceID.
func (ids) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return newSpanID() }

func newSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.BigEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}
