package provider

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/model"
)

// sse is a stream of SDK events held in memory: each event is a text, and
// "!" ends the step.
type sse struct {
	evs    []string
	i      int
	err    error
	closed bool
}

func (s *sse) Next() bool      { s.i++; return s.i <= len(s.evs) }
func (s *sse) Current() string { return s.evs[s.i-1] }
func (s *sse) Err() error      { return s.err }
func (s *sse) Close() error    { s.closed = true; return nil }

type folder struct {
	end    []model.Event
	endErr error
}

func (folder) Fold(ev *string) ([]model.Event, bool, error) {
	switch *ev {
	case "!":
		return []model.Event{{Type: model.Finish}}, true, nil
	case "bad":
		return nil, false, errors.New("bad event")
	}
	return []model.Event{{Type: model.TextDelta, Text: *ev}}, false, nil
}

func (f folder) End() ([]model.Event, error) { return f.end, f.endErr }

func relay(ctx context.Context, s *sse, f folder, stopAfter int) (texts []string, err error) {
	failure := func(err error) Failure { return Failure{Err: errors.Join(errors.New("classified"), err)} }
	n := 0
	Relay(ctx, "test", s, f, failure, func(e model.Event, e2 error) bool {
		if e2 != nil {
			err = e2
			return false
		}
		texts = append(texts, string(e.Type)+":"+e.Text)
		n++
		return n != stopAfter
	})
	return texts, err
}

// TestRelay: the events are folded in order until the step is done; a
// consumer that stops, a cancelled context, a failed stream and an early
// end each end it as they should, and the stream is always closed.
func TestRelay(t *testing.T) {
	ctx := context.Background()
	s := &sse{evs: []string{"a", "b", "!", "unread"}}
	got, err := relay(ctx, s, folder{}, 0)
	if err != nil || len(got) != 3 || s.i != 3 || !s.closed {
		t.Fatalf("done: %v, %v, read %d, closed %v; want a, b, finish and no more read", got, err, s.i, s.closed)
	}
	s = &sse{evs: []string{"a", "b", "c"}}
	if got, _ := relay(ctx, s, folder{}, 1); len(got) != 1 || s.i != 1 || !s.closed {
		t.Fatalf("stopped: %v, read %d; want one event and no more read", got, s.i)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := relay(cancelled, &sse{evs: []string{"a"}}, folder{}, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v, want context.Canceled", err)
	}
	if _, err := relay(ctx, &sse{evs: []string{"bad"}}, folder{}, 0); err == nil || err.Error() != "bad event" {
		t.Fatalf("bad event: %v, want the fold's error", err)
	}
	broken := errors.New("connection reset")
	if _, err := relay(ctx, &sse{evs: []string{"a"}, err: broken}, folder{}, 0); !errors.Is(err, broken) || !strings.Contains(err.Error(), "classified") || model.KindOf(err) != model.Interrupted {
		t.Fatalf("broken: %v, want the classified stream error, interrupted", err)
	}
	got, err = relay(ctx, &sse{evs: []string{"a"}}, folder{end: []model.Event{{Type: model.Finish}}}, 0)
	if err != nil || len(got) != 2 || got[1] != string(model.Finish)+":" {
		t.Fatalf("end: %v, %v; want a and End's finish", got, err)
	}
	truncated := errors.New("cut off")
	if _, err := relay(ctx, &sse{}, folder{endErr: truncated}, 0); !errors.Is(err, truncated) {
		t.Fatalf("early end: %v, want End's error", err)
	}
}
