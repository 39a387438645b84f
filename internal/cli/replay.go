package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/replay/report"
)

// ReplayRequest is what `baton replay` asks its engine: to replay Export
// against the agents of the agent file Agents ("" for the embedded demo
// agent), running read tools again when RunReads is set.
type ReplayRequest struct {
	Export   api.Export
	Agents   string
	RunReads bool
}

// Replayer is the engine of `baton replay` (package replay, which the
// baton command links; the client commands do not).
type Replayer func(ctx context.Context, r ReplayRequest) (report.Report, error)

// Replay runs `baton replay ARGS` with engine and returns its exit code:
// 0 when the replay found no divergence it was not told to accept, 1 when
// it did (the report is printed either way), 2 for bad arguments. An
// EXPORT of "-" is read from stdin.
func Replay(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string, engine Replayer) int {
	e := &env{stdout: stdout, stderr: stderr, stdin: stdin, getenv: getenv, replayer: engine}
	return e.exit("replay", e.replay(ctx, args))
}

// divergedError is a replay that diverged.
type divergedError struct{ n int }

func (e *divergedError) Error() string {
	return fmt.Sprintf("the replay diverged from the recording %d time(s)", e.n)
}

// replay is `baton replay EXPORT`.
func (e *env) replay(ctx context.Context, args []string) error {
	c := e.flags("replay", true)
	agents := c.fs.String("agents", e.getenv("BATON_AGENTS"), "the agent file to replay against (default $BATON_AGENTS, else the demo agent)")
	accept := c.fs.String("accept", "", "divergence kinds to accept, comma-separated (e.g. tool-gone,answer-changed)")
	reads := c.fs.Bool("run-reads", false, "run read tools again and compare their results")
	pos, err := c.parse(args, 1, false, "EXPORT")
	if err != nil {
		return err
	}
	var kinds []report.Kind
	for k := range strings.SplitSeq(*accept, ",") {
		if k = strings.TrimSpace(k); k != "" {
			if !knownKind(report.Kind(k)) {
				return usagef("--accept: unknown divergence kind %q", k)
			}
			kinds = append(kinds, report.Kind(k))
		}
	}
	if e.replayer == nil {
		return errors.New("this program has no replay engine: run the baton command")
	}
	var b []byte
	if pos[0] == "-" {
		b, err = io.ReadAll(e.stdin)
	} else {
		b, err = os.ReadFile(pos[0])
	}
	if err != nil {
		return err
	}
	var exp api.Export
	if err := json.Unmarshal(b, &exp); err != nil || len(exp.Facts) == 0 {
		return usagef("%s is not an export of a session (baton export SESSION -f FILE writes one)", pos[0])
	}
	rep, err := e.replayer(ctx, ReplayRequest{Export: exp, Agents: *agents, RunReads: *reads})
	if err != nil {
		return err
	}
	rep.Accept(report.Kinds(kinds...))
	if c.json {
		err = e.printJSON(rep)
	} else {
		err = rep.Write(e.stdout)
	}
	if err != nil {
		return err
	}
	if rep.Failed() {
		return &divergedError{n: len(rep.Divergences)}
	}
	return nil
}

// knownKind reports whether k is a kind of divergence a replay reports.
func knownKind(k report.Kind) bool {
	switch k {
	case report.AgentGone, report.ToolGone, report.ToolRefused, report.RuleChanged, report.ClaimChanged,
		report.StepsChanged, report.ResultChanged, report.AnswerChanged, report.OutcomeChanged:
		return true
	}
	return false
}
