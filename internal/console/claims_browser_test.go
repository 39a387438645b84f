package console_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/pkg/reducer"
)

// TestConsoleShowsClaims: a grant left by a turn cancelled mid-effect
// shows on the session page with a Release button, and the release from
// the page empties the card; a turn blocked behind another session's
// grant says by which. The facts are recorded through the session store,
// as the runner records them.
func TestConsoleShowsClaims(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := newBrowser(t, ctx)
	s := newStack(t, ctx, "http://127.0.0.1:1", func(*http.Request) (string, bool) { return "local", true })
	ss := s.app.Sessions
	order := []claims.Claim{{Namespace: "orders", Key: "o-1", Access: claims.Write}}
	record := func(id string, facts func(turn string, agent reducer.Actor) []reducer.Fact) {
		t.Helper()
		sess, err := ss.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		turn := ids.New("turn")
		agent := reducer.Actor{Kind: reducer.ActorAgent, ID: turn}
		fs := append([]reducer.Fact{
			{Type: reducer.MessageReceived, Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: "local"}, Message: &reducer.Message{ID: ids.New("msg"), Text: "Refund o-1."}},
			{Type: reducer.TurnStarted, Actor: agent, Turn: turn, Stream: turn, Lease: time.Now().Add(10 * time.Minute)},
		}, facts(turn, agent)...)
		if _, err := ss.Append(ctx, id, sess.State, fs...); err != nil {
			t.Fatal(err)
		}
	}
	holder := s.create(ctx, "notes")
	var grant claims.Grant
	record(holder, func(turn string, agent reducer.Actor) []reducer.Fact {
		call := "tc_" + turn + "_1_0"
		grant = claims.Grant{ID: claims.GrantID(holder, call), Session: holder, Owner: "local", Turn: turn, ToolCall: call, Claims: order}
		return []reducer.Fact{{Type: reducer.ClaimGranted, Actor: agent, Turn: turn, Grant: &grant}}
	})
	if err := ss.Cancel(ctx, holder, reducer.Actor{Kind: reducer.ActorOperator, ID: "local"}, "stuck"); err != nil {
		t.Fatal(err)
	}
	waiter := s.create(ctx, "notes")
	record(waiter, func(turn string, agent reducer.Actor) []reducer.Fact {
		return []reducer.Fact{{Type: reducer.TurnSuspended, Actor: agent, Turn: turn, Cause: reducer.CauseBlocked,
			Block: &claims.Block{ToolCallID: "tc_" + turn + "_1_0", Tool: "refund", Claims: order, Outcome: claims.Blocked, Blockers: []claims.Grant{grant}}}}
	})

	b.open(s.url + "/console/#/s/" + waiter)
	b.waitFor("the blocked card", jsHasText(`#claims .blocked`, "held by "+grant.ID+" of session "+holder))
	b.shot("12-claims-blocked")

	b.open(s.url + "/console/#/s/" + holder)
	b.waitFor("the grant", jsHasText(`#claims .grant`, "orders:o-1 (write)"))
	b.shot("13-claims-grant")
	b.run("release", chromedp.Click(chromedp.CSS(`#claims .grant button.release`)))
	b.waitFor("the card gone", `!document.querySelector('#claims .grant')`)
	var view api.Session
	s.call(ctx, "GET", "/sessions/"+holder, "", &view)
	if len(view.Grants) != 0 {
		t.Fatalf("grants after the release: %+v", view.Grants)
	}
}
