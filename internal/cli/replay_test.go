package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batonlib "github.com/baton-run/baton"
	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/internal/cli"
	"github.com/baton-run/baton/internal/replay"
	"github.com/baton-run/baton/internal/replay/report"
)

// engine is baton replay's engine as the baton command has it, on the demo
// tools.
func engine(ctx context.Context, r cli.ReplayRequest) (report.Report, error) {
	agents, err := replay.Agents(ctx, host.Config{Tools: batonlib.DemoTools()}, r.Agents)
	if err != nil {
		return report.Report{}, err
	}
	return replay.Run(ctx, r.Export, agents, replay.Options{RunReads: r.RunReads})
}

// replayCLI runs baton replay in-process.
func replayCLI(ctx context.Context, env vars, args ...string) result {
	return replayIn(ctx, env, "", args...)
}

// replayIn is replayCLI with stdin.
func replayIn(ctx context.Context, env vars, stdin string, args ...string) result {
	var out, errb bytes.Buffer
	code := cli.Replay(ctx, args, strings.NewReader(stdin), &out, &errb, env.get, engine)
	return result{code, out.String(), errb.String()}
}

// noEmail is the demo agent without its send_email tool.
const noEmail = `{"agents": {"demo": {"provider": "scripted",
  "script": {"steps": [{"text": "x"}]},
  "system": "You are baton's demo agent.",
  "tools": ["get_weather", "search_docs"]}}}`

// TestReplayCommand: a demo session run on the dev server through its
// approval and exported with baton export -f replays against the demo
// agent with no divergence (exit 0); against an agent file whose demo
// agent lost send_email, baton replay names the tool, as text and as
// JSON, and exits 1 unless --accept tool-gone.
func TestReplayCommand(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	env := vars{"BATON_OPERATOR": "replay-" + t.Name()}
	id := strings.TrimSpace(must(t, ctx, env, "new", "demo"))
	must(t, ctx, env, "send", id, "Send the team a status update")
	var st api.Session
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if err := json.Unmarshal([]byte(must(t, ctx, env, "show", "--json", id)), &st); err != nil {
			t.Fatal(err)
		}
		if len(st.Pending) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no approval: %+v", st)
		}
	}
	must(t, ctx, env, "approve", id, st.Pending[0].ApprovalID)
	must(t, ctx, env, "tail", id, "--until-idle")
	dir := t.TempDir()
	file := filepath.Join(dir, "session.json")
	must(t, ctx, env, "export", id, "-f", file)

	r := replayCLI(ctx, env, file)
	if r.code != 0 || !strings.Contains(r.out, "recorded completed in 3 step(s), replayed completed in 3 step(s)") || !strings.HasSuffix(r.out, "no divergence\n") {
		t.Fatalf("replay against the demo agent: exit %d, stderr %q, out:\n%s", r.code, r.stderr, r.out)
	}

	// "-" reads the export from stdin, as baton export prints it.
	if r := replayIn(ctx, env, must(t, ctx, env, "export", id), "-"); r.code != 0 || !strings.HasSuffix(r.out, "no divergence\n") {
		t.Fatalf("replay - : exit %d, stderr %q, out:\n%s", r.code, r.stderr, r.out)
	}

	agents := filepath.Join(dir, "agents.json")
	if err := os.WriteFile(agents, []byte(noEmail), 0o600); err != nil {
		t.Fatal(err)
	}
	r = replayCLI(ctx, env, file, "--agents", agents)
	if r.code != cli.ExitError || !strings.Contains(r.out, "diverged: turn 1 step 2: tool-gone (send_email") ||
		!strings.Contains(r.stderr, "baton: replay: the replay diverged from the recording 1 time(s)") {
		t.Fatalf("replay without send_email: exit %d, stderr %q, out:\n%s", r.code, r.stderr, r.out)
	}
	r = replayCLI(ctx, vars{"BATON_AGENTS": agents}, "--json", file)
	var rep report.Report
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil || r.code != cli.ExitError || len(rep.Divergences) != 1 ||
		rep.Divergences[0].Kind != report.ToolGone || rep.Divergences[0].Tool != "send_email" || rep.Session != id {
		t.Fatalf("replay --json ($BATON_AGENTS): exit %d, %v, report %+v", r.code, err, rep)
	}
	if r := replayCLI(ctx, env, file, "--agents", agents, "--accept", "tool-gone"); r.code != 0 || !strings.Contains(r.out, "accepted: turn 1 step 2: tool-gone") {
		t.Fatalf("replay --accept tool-gone: exit %d, stderr %q, out:\n%s", r.code, r.stderr, r.out)
	}

	// Bad arguments are usage errors; the client's Run has no engine.
	for _, args := range [][]string{{}, {file, "--accept", "nonsense"}, {filepath.Join(dir, "agents.json")}} {
		if r := replayCLI(ctx, env, args...); r.code != cli.ExitUsage {
			t.Errorf("replay %q: exit %d, stderr %q; want a usage error", args, r.code, r.stderr)
		}
	}
	if r := replayCLI(ctx, env, filepath.Join(dir, "nosuch.json")); r.code != cli.ExitError || !strings.Contains(r.stderr, "no such file") {
		t.Errorf("replay of a missing file: exit %d, stderr %q", r.code, r.stderr)
	}
	expect(t, ctx, env, cli.ExitError, "no replay engine", "replay", file)
}
