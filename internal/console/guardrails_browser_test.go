package console_test

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// TestConsoleShowsGuardrails: a turn whose answer streamed live and then
// tripped an output guardrail shows the retracted step marked with the
// guardrail's reason; the Guardrails card lists every decision of the
// session, the allow included; the timeline describes them.
func TestConsoleShowsGuardrails(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := newBrowser(t, ctx)
	s := newStack(t, ctx, "http://127.0.0.1:1", func(*http.Request) (string, bool) { return "local", true })
	id := s.session(ctx, "guarded", "What is the door code?")
	b.open(s.url + "/console/#/s/" + id)
	b.waitFor("the turn to finish", jsFinished)
	b.waitFor("the retracted step", jsHasText(`#turn .step.retracted .marker.guardrail`, "Guardrail no-door-codes (output): block — That answer held a door code. (retracted)"))
	b.waitFor("the guardrails card", `document.querySelectorAll('#guardrails tr[data-action]').length === 2`)
	b.waitFor("the block listed", jsHasText(`#guardrails tr[data-action="block"]`, "no-door-codes")+" && "+jsHasText(`#guardrails tr[data-action="block"]`, "output (step 0)"))
	b.waitFor("the allow listed", jsHasText(`#guardrails tr[data-action="allow"]`, "polite"))
	b.waitFor("the decisions in the timeline", jsHasText(`#timeline li[data-type="guardrail.decided"]`, "no-door-codes (output step 0): block — That answer held a door code."))
	b.waitFor("the turn's version in the timeline", jsHasText(`#timeline li[data-type="turn.started"]`, "agent fp1-")+" && "+jsHasText(`#timeline li[data-type="turn.started"]`, "build local"))
	b.shot("16-guardrails")
}
