package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/pkg/reducer"
)

// show names the policy of a turn that resumed on a changed agent, and
// each call a deploy made stale, with what became of it.
func TestShowsThePolicyAndStaleCalls(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	e := &env{stdout: &out}
	e.showTable(api.Session{ID: "s_1", Agent: "demo", Status: reducer.Suspended,
		Turn: &api.Turn{ID: "turn_1", Invocations: 2, Changed: true,
			Version: reducer.Version{Fingerprint: "fp1-aaaa", Build: "7", OnChange: reducer.OnChangeContinue},
			Latest:  reducer.Version{Fingerprint: "fp1-bbbb", Build: "8", OnChange: reducer.OnChangeContinue}},
		Stale: []reducer.Stale{
			{Turn: "turn_1", ToolCallID: "tc_1", Tool: "lookup", Cause: reducer.StaleRemoved, Detail: `unknown tool "lookup"`},
			{Turn: "turn_1", ToolCallID: "tc_2", Tool: "refund", Cause: reducer.StaleChanged, Detail: "asked again as ap_tc_2_changed"},
		}})
	for _, want := range []string{
		"version  agent fp1-aaaa, build 7; resumed on a changed agent: fp1-bbbb, build 8; policy continue: runs on the new definition\n",
		`stale    call tc_1 of lookup (turn turn_1): its tool is gone since the deploy; not run, the model got: unknown tool "lookup"` + "\n",
		"stale    call tc_2 of refund (turn turn_1): its tool changed since it was approved; asked again as ap_tc_2_changed\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	e.showTable(api.Session{ID: "s_2", Agent: "demo", Status: reducer.Running,
		Turn: &api.Turn{ID: "turn_2", Invocations: 2,
			Version: reducer.Version{Fingerprint: "fp1-aaaa", Build: "7", OnChange: reducer.OnChangePin},
			Latest:  reducer.Version{Fingerprint: "fp1-aaaa", Build: "7", OnChange: reducer.OnChangePin}}})
	if want := "version  agent fp1-aaaa, build 7; policy pin: runs on build 7\n"; !strings.Contains(out.String(), want) {
		t.Errorf("show lacks %q:\n%s", want, out.String())
	}
}
