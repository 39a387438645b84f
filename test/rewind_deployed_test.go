package test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/test/harness"
)

// TestDeployedForkAndRewind: through the real bootstraps behind the
// modelled front door, a session's first turn is forked and the session
// rewound to before its second turn: the fork is the caller's (404 to
// another), answers a message of its own, and leaves the original as it
// was; the rewind's answer names the point; a fork during a turn is
// refused with 409 and writes nothing.
func TestDeployedForkAndRewind(t *testing.T) {
	t.Parallel()
	kumo(t)
	dir := t.TempDir()
	agents := filepath.Join(dir, "agents.json")
	if err := os.WriteFile(agents, []byte(`{"agents":{"talk":{"provider":"scripted","system":"You talk.",
	 "script":{"steps":[{"delay":"400ms","text":"Noted."}]},
	 "limits":{"budget":"1500ms","margin":"300ms","leaseGrace":"200ms"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	d := harness.StartDeployed(t, frontLimits(), harness.WithAgents(agents))
	var s struct{ ID string }
	if r := call(t, d, "POST", "/sessions", d.Token(alice), `{"agent":"talk"}`, nil); r.code != http.StatusCreated || json.Unmarshal(r.body, &s) != nil {
		t.Fatalf("create: %v", r)
	}
	say := func(id, text string) {
		t.Helper()
		if r := call(t, d, "POST", "/sessions/"+id+"/messages", d.Token(alice), fmt.Sprintf(`{"text":%q}`, text), nil); r.code != http.StatusAccepted {
			t.Fatalf("post: %v", r)
		}
		waitAnswered(t, d, id)
	}
	say(s.ID, "one")
	say(s.ID, "two")
	facts, err := d.Store.Facts(t.Context(), s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var turns []string
	for _, f := range facts {
		if f.Type == reducer.TurnStarted {
			turns = append(turns, f.Turn)
		}
	}
	if len(turns) != 2 {
		t.Fatalf("%d turns", len(turns))
	}

	body := `{"turn":"` + turns[0] + `"}`
	if r := call(t, d, "POST", "/sessions/"+s.ID+"/fork", d.Token(bob), body, nil); r.code != http.StatusNotFound {
		t.Fatalf("another caller's fork: %v, want 404", r)
	}
	var fork api.Rewound
	r := call(t, d, "POST", "/sessions/"+s.ID+"/fork", d.Token(alice), body, nil)
	if r.code != http.StatusCreated || json.Unmarshal(r.body, &fork) != nil || fork.From != s.ID || fork.Session == s.ID {
		t.Fatalf("fork: %v", r)
	}
	if r := call(t, d, "GET", "/sessions/"+fork.Session, d.Token(bob), "", nil); r.code != http.StatusNotFound {
		t.Fatalf("another caller sees the fork: %v", r)
	}
	say(fork.Session, "three")
	orig, err := d.Store.Load(t.Context(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	forked, err := d.Store.Load(t.Context(), fork.Session)
	if err != nil {
		t.Fatal(err)
	}
	// The fork: turn one, then its own; the original: turns one and two.
	if len(forked.History) != 4 || len(orig.History) != 4 || orig.State.LastSeq != facts[len(facts)-1].Seq || forked.State.Turns != 1 {
		t.Fatalf("history: fork %d messages (%d turns), original %d messages at seq %d", len(forked.History), forked.State.Turns, len(orig.History), orig.State.LastSeq)
	}
	if got, want := forked.History[2].Content[0].Text, "three"; got != want {
		t.Fatalf("the fork's second user message is %q, want %q", got, want)
	}

	var rw api.Rewound
	if r := call(t, d, "POST", "/sessions/"+s.ID+"/rewind", d.Token(alice), `{"before":"`+turns[1]+`"}`, nil); r.code != http.StatusOK || json.Unmarshal(r.body, &rw) != nil || rw.Point.Before != turns[1] || rw.Status != reducer.Idle {
		t.Fatalf("rewind: %v", r)
	}
	if back, err := d.Store.Load(t.Context(), s.ID); err != nil || len(back.History) != 2 {
		t.Fatalf("after the rewind: %v, %d messages, want turn one's 2", err, len(back.History))
	}

	// A turn open: refused, nothing written.
	if r := call(t, d, "POST", "/sessions/"+s.ID+"/messages", d.Token(alice), `{"text":"four"}`, nil); r.code != http.StatusAccepted {
		t.Fatalf("post: %v", r)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for { // the turn starts, and its model answers in 400 ms
		if sess, err := d.Store.Load(ctx, s.ID); err == nil && sess.State.Turn != nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the turn never started")
		case <-time.After(10 * time.Millisecond):
		}
	}
	before, _ := d.Store.Facts(t.Context(), s.ID, 0)
	if r := call(t, d, "POST", "/sessions/"+s.ID+"/fork", d.Token(alice), body, nil); r.code != http.StatusConflict {
		t.Fatalf("fork during a turn: %v, want 409", r)
	}
	if r := call(t, d, "POST", "/sessions/"+s.ID+"/rewind", d.Token(alice), body, nil); r.code != http.StatusConflict {
		t.Fatalf("rewind during a turn: %v, want 409", r)
	}
	if after, _ := d.Store.Facts(t.Context(), s.ID, 0); len(after) != len(before) && after[len(before)].Type == reducer.SessionRewound {
		t.Fatalf("a refused fork or rewind wrote %s", after[len(before)].Type)
	}
	waitAnswered(t, d, s.ID)
}

// waitAnswered waits until the session has no open turn and no message
// waiting for one.
func waitAnswered(t *testing.T, d *harness.Deployed, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		sess, err := d.Store.Load(ctx, id)
		if err == nil && sess.State.Turn == nil && len(sess.State.Inbox) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("session %s was not answered: %v", id, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
