package provider

import (
	"context"

	"github.com/baton-run/baton/internal/model"
)

// SSEStream is the stream of server-sent events an SDK's streaming call
// returns (ssestream.Stream of anthropic-sdk-go and openai-go).
type SSEStream[E any] interface {
	Next() bool
	Current() E
	Err() error
	Close() error
}

// Folder folds one step's SDK events into model events.
type Folder[E any] interface {
	// Fold is the model events of one SDK event; done once the step's
	// finish is among them.
	Fold(ev *E) (events []model.Event, done bool, err error)
	// End is the last events of a stream that ended before done, or the
	// error it ended with.
	End() ([]model.Event, error)
}

// Relay yields the model events f folds from stream until the step is
// done, the consumer stops, ctx ends (Canceled), or the stream fails (its
// ClassifyCall, with what failure reads from the error), then closes
// stream: the one read loop of the SSE providers.
func Relay[E any](ctx context.Context, name string, stream SSEStream[E], f Folder[E], failure func(error) Failure, yield func(model.Event, error) bool) {
	defer stream.Close()
	emit := func(evs []model.Event) bool {
		for _, e := range evs {
			if !yield(e, nil) {
				return false
			}
		}
		return true
	}
	for stream.Next() {
		if ctx.Err() != nil {
			yield(model.Event{}, Canceled(name, ctx.Err()))
			return
		}
		ev := stream.Current()
		out, done, err := f.Fold(&ev)
		if err != nil {
			yield(model.Event{}, err)
			return
		}
		if !emit(out) || done {
			return
		}
	}
	if err := stream.Err(); err != nil {
		yield(model.Event{}, ClassifyCall(ctx, name, err, failure))
		return
	}
	out, err := f.End()
	if err != nil {
		yield(model.Event{}, err)
		return
	}
	emit(out)
}
