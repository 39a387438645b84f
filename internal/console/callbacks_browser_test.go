package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/pkg/reducer"
)

// TestConsoleCompletesCallbacksByHand: a turn whose two calls wait for
// their callbacks (the outside system took the tokens and never answers)
// shows a card for each, with its deadline and heartbeat; the owner
// completes one by hand with JSON (text that is not JSON is refused on
// the page) and fails the other with an error and a reason; the cards go,
// the model gets both results, and the timeline and the facts record the
// ends as the operator's.
func TestConsoleCompletesCallbacksByHand(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	outside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) }))
	t.Cleanup(outside.Close)
	b := newBrowser(t, ctx)
	s := newStack(t, ctx, outside.URL, func(*http.Request) (string, bool) { return "local", true })
	id := s.session(ctx, "builds", "Build main and dev")
	var view api.Session
	for view.Status != reducer.Suspended || len(view.Callbacks) != 2 {
		if ctx.Err() != nil {
			t.Fatalf("the turn never waited for two callbacks: %+v", view)
		}
		time.Sleep(50 * time.Millisecond)
		s.call(ctx, "GET", "/sessions/"+id, "", &view)
	}
	done, failed := view.Callbacks[0].ToolCallID, view.Callbacks[1].ToolCallID
	card := func(call string) string { return fmt.Sprintf(`#callbacks .callback[data-callback=%s]`, jsString(call)) }

	b.open(s.url + "/console/#/s/" + id)
	b.waitFor("both callback cards", `document.querySelectorAll('#callbacks .callback').length === 2`)
	b.waitFor("the status", jsHasText(`#status`, "suspended: callback"))
	for _, call := range []string{done, failed} {
		b.waitFor("the card of "+call, jsHasText(card(call), "Waiting for a callback: start_build")+" && "+jsHasText(card(call), call)+
			" && "+jsHasText(card(call)+" .callback-times", "deadline ")+" && "+jsHasText(card(call)+" .callback-times", "no heartbeat yet"))
	}
	b.waitFor("the calls marked in the turn", `[...document.querySelectorAll('#turn .tool .state')].filter(e => e.textContent === 'awaiting callback').length === 2`)
	b.waitFor("the opened callbacks in the timeline", `document.querySelectorAll('#timeline li[data-type="callback.opened"]').length === 2`)
	b.shot("14-callbacks")

	b.run("type a result that is not JSON", chromedp.SendKeys(chromedp.CSS(card(done)+" .callback-output"), `{"build":`))
	b.run("complete it", chromedp.Click(chromedp.CSS(card(done)+" .callback-complete")))
	b.waitFor("the refusal on the page", jsHasText(card(done)+" .error", "not JSON"))
	b.run("fail with no text", chromedp.Click(chromedp.CSS(card(failed)+" .callback-fail")))
	b.waitFor("the empty error refused", jsHasText(card(failed)+" .error", "Enter the error the model sees."))
	if n := countEnded(t, ctx, s, id); n != 0 {
		t.Fatalf("refused completions wrote %d callback.ended fact(s)", n)
	}

	b.run("type the result", chromedp.SetValue(chromedp.CSS(card(done)+" .callback-output"), `{"build": 7, "status": "passed"}`))
	b.run("complete by hand", chromedp.Click(chromedp.CSS(card(done)+" .callback-complete")))
	b.waitFor("the completed card to go", `!document.querySelector(`+jsString(card(done))+`) && document.querySelectorAll('#callbacks .callback').length === 1`)
	b.run("type the error", chromedp.SendKeys(chromedp.CSS(card(failed)+" .callback-error"), "the build farm is down"))
	b.run("type a reason", chromedp.SendKeys(chromedp.CSS(card(failed)+" .callback-reason"), "checked by hand"))
	b.run("fail the call", chromedp.Click(chromedp.CSS(card(failed)+" .callback-fail")))
	b.waitFor("the cards to go", `document.querySelectorAll('#callbacks .callback').length === 0`)
	b.waitFor("the turn to finish", jsFinished)
	b.waitFor("the final text", jsHasText(`#turn .text`, "Both builds are reported."))
	b.waitFor("the result on its call", jsHasText(fmt.Sprintf(`#turn .tool[data-call=%s] pre`, jsString(done)), `"build": 7`))
	b.waitFor("the error on its call", jsHasText(fmt.Sprintf(`#turn .tool[data-call=%s] pre.error`, jsString(failed)), "the build farm is down"))
	b.waitFor("the failure in the timeline", jsHasText(`#timeline li[data-type="callback.ended"]`, "failed: the build farm is down (checked by hand)"))
	b.waitFor("the completion in the timeline", jsHasText(`#timeline li[data-type="callback.ended"]`, "completed"))
	b.shot("15-callbacks-completed")

	var facts api.Facts
	s.call(ctx, "GET", "/sessions/"+id+"/facts", "", &facts)
	ended := 0
	for _, f := range facts.Facts {
		if f.Type == reducer.CallbackEnded {
			ended++
			if f.Actor != (reducer.Actor{Kind: reducer.ActorOperator, ID: "local"}) {
				t.Errorf("callback.ended by %+v, want operator local", f.Actor)
			}
		}
	}
	if ended != 2 {
		t.Fatalf("%d callback.ended facts, want 2", ended)
	}
}

// countEnded returns how many callback.ended facts session id has.
func countEnded(t *testing.T, ctx context.Context, s *stack, id string) int {
	t.Helper()
	var facts api.Facts
	s.call(ctx, "GET", "/sessions/"+id+"/facts", "", &facts)
	n := 0
	for _, f := range facts.Facts {
		if strings.HasPrefix(string(f.Type), "callback.ended") {
			n++
		}
	}
	return n
}
