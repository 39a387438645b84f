package session_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
)

// TestEveryMessageOfTheGoAPIIsChecked posts, converses and schedules texts
// no message may have through the store, as a Go program (and batontest)
// does: each fails with a *reducer.TextError (a schedule's wrapped in
// ErrBadSchedule too) and writes nothing; a schedule's cron that is not
// five fields in UTC fails with reducer.ErrBadCron.
func TestEveryMessageOfTheGoAPIIsChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, id := store(), ids.New("s")
	if _, err := s.Create(ctx, id, "alice", "demo"); err != nil {
		t.Fatal(err)
	}
	bad := map[string]string{
		"empty":     "",
		"blank":     " \n\t\u00a0 ",
		"too long":  strings.Repeat("x", reducer.MaxText+1),
		"not UTF-8": "caf\xe9",
	}
	for name, text := range bad {
		_, err := s.Post(ctx, id, alice, text)
		if te, ok := errors.AsType[*reducer.TextError](err); !ok || !errors.Is(err, reducer.ErrBadText) || te.Field != "text" {
			t.Errorf("post %s: %v, want a *reducer.TextError", name, err)
		}
		_, _, err = s.Converse(ctx, id, "alice", "demo", reducer.Message{ID: ids.New("m"), Text: text}, func(reducer.State) error { return nil })
		if !errors.Is(err, reducer.ErrBadText) {
			t.Errorf("converse %s: %v, want ErrBadText", name, err)
		}
		err = s.SetSchedule(ctx, id, alice, "0 9 * * *", text)
		if !errors.Is(err, session.ErrBadSchedule) || !errors.Is(err, reducer.ErrBadText) {
			t.Errorf("schedule %s: %v, want ErrBadSchedule and ErrBadText", name, err)
		}
	}
	for _, cron := range []string{"@every 1s", "@hourly", "CRON_TZ=Asia/Tokyo 0 9 * * *", "TZ=UTC 0 9 * * *", "*/1 * * * * *"} {
		if err := s.SetSchedule(ctx, id, alice, cron, "hi"); !errors.Is(err, session.ErrBadSchedule) || !errors.Is(err, reducer.ErrBadCron) {
			t.Errorf("schedule %q: %v, want ErrBadSchedule and ErrBadCron", cron, err)
		}
	}
	if fs, _ := s.Facts(ctx, id, 0); len(fs) != 1 {
		t.Fatalf("%d facts after refused messages, want 1", len(fs))
	}
	if _, err := s.Post(ctx, id, alice, strings.Repeat("é", reducer.MaxText/2)); err != nil {
		t.Fatalf("post at the limit: %v", err)
	}
}
