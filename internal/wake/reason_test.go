package wake_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
)

// The reason stays a plain JSON string on the wire, so wakes sent before it
// was typed still parse, and the reason for a suspension is its cause.
func TestReasonWireFormat(t *testing.T) {
	b, err := json.Marshal(wake.Wake{Session: "s_1", Reason: wake.Rewake, Seq: 3})
	if err != nil || string(b) != `{"session":"s_1","reason":"rewake","seq":3}` {
		t.Fatalf("marshal = %s, %v", b, err)
	}
	w, err := wake.Parse(`{"session":"s_1","reason":"model-unavailable","seq":3}`)
	if err != nil || w.Reason != wake.ModelUnavailable || w.Reason != wake.ForCause(reducer.CauseModelUnavailable) {
		t.Fatalf("parse = %+v, %v", w, err)
	}
	for _, c := range []reducer.Cause{reducer.CauseBudget, reducer.CauseThrottled, reducer.CauseLease} {
		if got := wake.ForCause(c); string(got) != string(c) {
			t.Errorf("ForCause(%s) = %s", c, got)
		}
	}
}

type failing struct{ sent []wake.Wake }

func (f *failing) Wake(_ context.Context, w wake.Wake, _ time.Duration) error {
	f.sent = append(f.sent, w)
	return errors.New("queue down")
}

// Notify sends through the waker and swallows its failure (the tick re-sends);
// with no waker it sends nothing.
func TestNotify(t *testing.T) {
	f := &failing{}
	wake.Notify(t.Context(), f, nil, wake.Wake{Session: "s_1", Reason: wake.Message}, 0)
	if len(f.sent) != 1 || f.sent[0].Reason != wake.Message {
		t.Fatalf("sent %+v", f.sent)
	}
	wake.Notify(t.Context(), nil, nil, wake.Wake{Session: "s_1", Reason: wake.Message}, 0)
}
