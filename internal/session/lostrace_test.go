package session_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
)

// TestLostRace: a write lost its race when another writer committed first
// or made the fact illegal; nothing else is a lost race.
func TestLostRace(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		lost bool
	}{
		{fmt.Errorf("append: %w", dynamo.ErrConflict), true},
		{fmt.Errorf("append: %w", &reducer.TransitionError{Reason: "no open turn"}), true},
		{fmt.Errorf("%w: %w", session.ErrBusy, session.ErrConflict), true},
		{errors.New("throttled"), false},
		{session.ErrNotFound, false},
		{nil, false},
	} {
		if got := session.LostRace(c.err); got != c.lost {
			t.Errorf("LostRace(%v) = %v, want %v", c.err, got, c.lost)
		}
	}
}
