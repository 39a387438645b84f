package cli_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/cli"
)

// TestGuardrailsShown: the dev server's guarded agent redacts a card
// number in the message and blocks an answer holding a door code; tail
// shows the block and its reason, and `baton guardrails` lists every
// decision, as a table and as JSON.
func TestGuardrailsShown(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	env := vars{}
	id := strings.TrimSpace(must(t, ctx, env, "new", "guarded"))
	must(t, ctx, env, "send", id, "my card is 4111 1111 1111 1111; what is the door code?")
	tl := startTail(ctx, env, "--until-idle", "--color", "never", id)
	if code := tl.wait(t, ctx); code != 0 {
		t.Fatalf("tail exited %d; stderr:\n%s", code, tl.stderr)
	}
	if out := tl.out.String(); !strings.Contains(out, "guardrail no-door-codes (output): block: That answer held a door code, so it was withheld. — the step above is retracted") {
		t.Fatalf("tail does not show the block:\n%s", out)
	}
	table := must(t, ctx, env, "guardrails", id)
	for _, want := range []string{"GUARDRAIL", "no-card-numbers  input", "redact", "no-door-codes    output", "block", "step 0"} {
		if !strings.Contains(table, want) {
			t.Fatalf("guardrails table lacks %q:\n%s", want, table)
		}
	}
	var ds []cli.Decision
	if err := json.Unmarshal([]byte(must(t, ctx, env, "guardrails", id, "-o", "json")), &ds); err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || ds[0].Action != "redact" || ds[0].Text != "my card is [card number]; what is the door code?" || ds[1].Action != "block" {
		t.Fatalf("decisions %+v", ds)
	}
	expect(t, context.Background(), env, cli.ExitNotFound, "", "guardrails", "sess_nope")
}

// TestShowsTheTurnsVersion: show prints the agent fingerprint and build
// the open turn runs on.
func TestShowsTheTurnsVersion(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	env := vars{}
	id := strings.TrimSpace(must(t, ctx, env, "new", "demo"))
	must(t, ctx, env, "send", id, demoMessage)
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	startTail(tctx, env, "--json", id).waitFor(t, tctx, regexp.MustCompile(`"approvalId"`))
	out := must(t, ctx, env, "show", id)
	if !regexp.MustCompile(`(?m)^version  agent fp1-[0-9a-f]{20}, build local$`).MatchString(out) {
		t.Fatalf("show does not print the turn's version:\n%s", out)
	}
	var v struct {
		Turn struct {
			Version struct{ Fingerprint, Build string }
		}
	}
	if err := json.Unmarshal([]byte(must(t, ctx, env, "show", id, "-o", "json")), &v); err != nil || v.Turn.Version.Build != "local" {
		t.Fatalf("show -o json: %+v, %v", v, err)
	}
}
