package console_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/baton-run/baton/api"
)

// TestConsoleGoesBack: a turn that emailed the team (approved) is answered
// again from the console: the note lists the email, which going back does
// not undo, and a second turn runs; then a fork from the first turn opens
// the new session's page, which links back to the original.
func TestConsoleGoesBack(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := newBrowser(t, ctx)
	s := newStack(t, ctx, "http://127.0.0.1:1", func(*http.Request) (string, bool) { return "local", true })
	id := s.session(ctx, "brisk", "Report the weather to the team")
	// approve answers the turn's approval, once it asks.
	approve := func(decision string) {
		var view api.Session
		for view.Status != "suspended" || len(view.Pending) == 0 {
			select {
			case <-ctx.Done():
				t.Fatalf("the turn never asked for approval: %+v", view)
			case <-time.After(50 * time.Millisecond):
			}
			s.call(ctx, "GET", "/sessions/"+id, "", &view)
		}
		s.call(ctx, "POST", "/sessions/"+id+"/approvals/"+view.Pending[0].ApprovalID, `{"decision":"`+decision+`"}`, nil)
	}
	approve("approve")

	b.open(s.url + "/console/#/s/" + id)
	b.waitFor("the turn to finish", jsFinished)
	b.waitFor("the go-back buttons", `document.querySelector('#regenerate-turn') && !document.querySelector('.goback').hidden`)
	b.run("answer again", chromedp.Click(chromedp.CSS(`#regenerate-turn`)))
	b.waitFor("the side effect listed", jsHasText(`#goback-note`, "Side effects after that point, not undone: send_email"))
	b.waitFor("a second turn", `document.querySelectorAll('#turns button').length === 2`)
	b.waitFor("the rewind in the timeline", jsHasText(`#timeline li[data-type="session.rewound"]`, "after step 0")+" && "+jsHasText(`#timeline li[data-type="session.rewound"]`, "1 side effect(s) after it"))
	b.shot("17-answered-again")
	approve("deny") // the second turn asks again; a fork waits for no open turn
	b.waitFor("the second turn to finish", jsFinished+` && document.querySelector('#status').textContent.startsWith('idle')`)

	b.run("show turn 1", chromedp.Click(chromedp.CSS(`#turns li:first-child button`)))
	b.waitFor("turn 1's go-back buttons", `!document.querySelector('.goback').hidden`)
	b.run("fork", chromedp.Click(chromedp.CSS(`#fork-turn`)))
	b.waitFor("the fork's page", `location.hash.startsWith('#/s/') && !location.hash.includes(`+jsString(id)+`) && document.querySelector('#from-link')?.textContent === `+jsString(id))
	b.shot("18-forked")
}
