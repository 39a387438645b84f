package report_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/replay/report"
)

// TestAcceptMovesWhatItAccepts: Accept moves the divergences it accepts
// to Accepted, and Failed counts only the rest; the text lists both, the
// JSON names every field, and a report with none says so.
func TestAcceptMovesWhatItAccepts(t *testing.T) {
	t.Parallel()
	r := report.Report{Session: "s_1", Agent: "desk", Turns: []report.Turn{{Number: 1, ID: "turn_1", Recorded: "completed", Replayed: "completed", RecordedSteps: 2, ReplayedSteps: 2}},
		Divergences: []report.Divergence{
			{Turn: 1, Step: 1, Kind: report.ToolGone, Call: "tc_1_0_0", Tool: "note", Detail: "gone"},
			{Turn: 1, Kind: report.AnswerChanged, Detail: "other"},
		}}
	if !r.Failed() || !slices.Equal(r.Kinds(), []report.Kind{report.ToolGone, report.AnswerChanged}) {
		t.Fatalf("failed %v, kinds %v", r.Failed(), r.Kinds())
	}
	r.Accept(report.Kinds(report.ToolGone))
	if len(r.Accepted) != 1 || r.Accepted[0].Tool != "note" || len(r.Divergences) != 1 || !r.Failed() {
		t.Fatalf("after accepting tool-gone: %+v", r)
	}
	text := r.String()
	for _, want := range []string{"replay of session s_1 (agent desk): 1 turn(s)", "turn 1 turn_1: recorded completed in 2 step(s), replayed completed in 2 step(s)",
		"accepted: turn 1 step 1: tool-gone (note, call tc_1_0_0): gone", "diverged: turn 1: answer-changed: other", "1 divergence(s)"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	r.Accept(func(report.Divergence) bool { return true })
	if r.Failed() || !strings.HasSuffix(r.String(), "no divergence\n") {
		t.Errorf("all accepted: failed %v\n%s", r.Failed(), r)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"divergences":[]`) || !strings.Contains(string(b), `"kind":"tool-gone"`) {
		t.Errorf("JSON %s: want an empty divergences list and the accepted kinds", b)
	}
}
