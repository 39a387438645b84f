package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/tool"
)

// TestConsoleShowsAChangedAgent: a turn waits for the approval of
// send_email; a deploy changes the tool (no longer idempotent) while the
// answer is on its way, so the resumed turn asks again. The console shows
// the turn resumed on a changed agent under the policy continue, the
// stale call and why, and the call.stale fact in the timeline.
func TestConsoleShowsAChangedAgent(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := newBrowser(t, ctx)
	s := newStack(t, ctx, "http://127.0.0.1:1", func(*http.Request) (string, bool) { return "local", true })
	id := s.session(ctx, "quick", "Email the team the weather.")
	pending := func() []api.Approval {
		for ctx.Err() == nil {
			var sess api.Session
			s.call(ctx, "GET", "/sessions/"+id, "", &sess)
			if len(sess.Pending) > 0 {
				return sess.Pending
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatal("no approval was asked for")
		return nil
	}
	first := pending()[0]

	// The deploy: the resume worker stops, send_email changes, it starts
	// again; the answer meanwhile was given for the tool as it was.
	s.kill()
	agent := *s.app.Agents["quick"]
	ts := agent.Tools.Tools()
	for i := range ts {
		if ts[i].Name == "send_email" {
			ts[i].Idempotent = false
		}
	}
	reg, err := tool.NewRegistry(ts...)
	if err != nil {
		t.Fatal(err)
	}
	agent.Tools = reg
	s.app.Agents["quick"] = &agent
	s.call(ctx, "POST", "/sessions/"+id+"/approvals/"+first.ApprovalID, `{"decision":"approve"}`, nil)
	s.poll(ctx)
	for again := pending(); again[0].ApprovalID == first.ApprovalID; again = pending() {
		time.Sleep(50 * time.Millisecond)
	}

	b.open(s.url + "/console/#/s/" + id)
	b.waitFor("the turn flagged as changed, with its policy", jsHasText(`#turn-version`, "resumed on a changed agent")+" && "+
		jsHasText(`#turn-version`, "policy continue: runs on the new definition"))
	b.waitFor("the stale call", jsHasText(`#stale-0`, "send_email")+" && "+jsHasText(`#stale-0`, "its tool changed since it was approved"))
	b.waitFor("the stale call in the timeline", jsHasText(`#timeline li[data-type="call.stale"]`, "send_email")+" && "+
		jsHasText(`#timeline li[data-type="call.stale"]`, "changed"))
	if !strings.HasSuffix(pending()[0].ApprovalID, "_changed") {
		t.Fatalf("pending %+v, want the call asked again", pending())
	}
	b.shot("17-changed-agent")
}
