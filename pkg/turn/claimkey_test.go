package turn_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// Claim keys a model gives at run time that hold NUL or another control
// character are refused as non-canonical keys are: the call gets a clear
// error result, nothing is granted and the tool does not run.
func TestClaimsControlCharacterKeyRefused(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"o-1\x00", "o-1\nDROP", "o\t1"} {
		t.Run(key, func(t *testing.T) {
			ctx := ctxT(t)
			srv := newOrderServer(t, 0)
			in, err := json.Marshal(map[string]string{"order": key})
			if err != nil {
				t.Fatal(err)
			}
			js := `{"steps":[{"text":"Refunding.","toolCalls":[{"name":"refund","input":` + string(in) + `}]},{"text":"Could not."}]}`
			agent := refundAgent(t, js, refundTool(srv, ids.New("i"), true), turn.Limits{Budget: 30 * time.Second})
			inv, _ := claimed(t, agent, time.Second)
			id := newSession(t, inv, "Refund it.")
			out, err := inv.runner.Start(ctx, id)
			if err != nil || out.Kind != turn.Completed {
				t.Fatalf("run: %+v %v", out, err)
			}
			if runs, _ := srv.report(); len(runs) != 0 {
				t.Fatalf("the tool ran: %v", runs)
			}
			ps, _ := readParts(t, inv, id, out.Turn)
			got := outputsFor(ps, "")
			if len(got) != 1 || !containsAll(got[0].ErrorText, "not canonical", "control character") {
				t.Fatalf("outputs = %+v, want one error saying the key holds a control character", got)
			}
			fs := facts(t, inv, id)
			if count(fs, reducer.ClaimGranted) != 0 || count(fs, reducer.ExecutionStarted) != 0 {
				t.Fatalf("facts %v: something was claimed or started", types(fs))
			}
		})
	}
}
