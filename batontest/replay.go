package batontest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/internal/replay"
	"github.com/baton-run/baton/internal/replay/report"
)

// The types of a replay's report (see Replay).
type (
	// Report is what a replay found: each turn, recorded and replayed,
	// and every divergence not accepted (Divergences) or accepted.
	Report = report.Report
	// Divergence is one difference between a recording and its replay:
	// its turn and step, its kind, the call and tool, and a detail.
	Divergence = report.Divergence
	// DivergenceKind names what diverged.
	DivergenceKind = report.Kind
)

// The kinds of divergence a replay reports.
const (
	// AgentGone: the session's agent is not defined any more.
	AgentGone = report.AgentGone
	// ToolGone: a tool the recording called is gone.
	ToolGone = report.ToolGone
	// ToolRefused: the schema now refuses a recorded call's input (or
	// accepts input it refused).
	ToolRefused = report.ToolRefused
	// RuleChanged: an approval rule now asks where it did not, or no
	// longer asks.
	RuleChanged = report.RuleChanged
	// ClaimChanged: a call now claims other resources.
	ClaimChanged = report.ClaimChanged
	// StepsChanged: a turn now takes another number of model steps.
	StepsChanged = report.StepsChanged
	// ResultChanged: a tool call's result differs.
	ResultChanged = report.ResultChanged
	// AnswerChanged: a turn's final answer differs.
	AnswerChanged = report.AnswerChanged
	// OutcomeChanged: a turn now ends otherwise.
	OutcomeChanged = report.OutcomeChanged
)

// ReplayOption tunes a replay.
type ReplayOption func(*replayConfig)

type replayConfig struct {
	accept []func(Divergence) bool
	opts   replay.Options
	file   string
}

// Accept accepts every divergence of the given kinds: the replay reports
// them as accepted and does not fail the test for them.
func Accept(kinds ...DivergenceKind) ReplayOption {
	return AcceptIf(report.Kinds(kinds...))
}

// AcceptIf accepts every divergence ok reports true for, such as those of
// one turn or one tool.
func AcceptIf(ok func(Divergence) bool) ReplayOption {
	return func(c *replayConfig) { c.accept = append(c.accept, ok) }
}

// RunReads runs the agent's read tools again in the replay and compares
// their results with the recorded ones (ResultChanged); without it every
// tool answers with its recorded result. Side effects never run.
func RunReads() ReplayOption { return func(c *replayConfig) { c.opts.RunReads = true } }

// AgentFile adds an agent file's agents (a path) to the Config's, as
// Options.Agents does for a kit.
func AgentFile(path string) ReplayOption { return func(c *replayConfig) { c.file = path } }

// Replay runs the recorded session export (as Session.Export or `baton
// export` made it) against the agent of c it was created for, and fails the
// test listing every divergence it does not accept (Accept, AcceptIf).
// Each recorded turn's messages are posted and the turn runs on the real
// runner, in memory: its model answers each step with what the recorded
// step said (text, reasoning, tool calls, finish reason, usage), every
// tool answers with the call's recorded result (a side effect never runs
// again; a read does with RunReads), and each recorded approval's answer
// is given again to the call at the same place (a guardrail's escalation
// too). The report names each change: a tool gone, a call its schema now
// refuses, an approval rule that now asks or no longer does, a guardrail
// that decides otherwise, other claims, another number of steps, answer,
// result or ending.
func Replay(tb TB, export api.Export, c host.Config, opts ...ReplayOption) Report {
	tb.Helper()
	r := ReplayReport(tb, export, c, opts...)
	if r.Failed() {
		var b strings.Builder
		for _, d := range r.Divergences {
			fmt.Fprintf(&b, "\n  %s", d)
		}
		tb.Fatalf("batontest: replay of session %s diverged %d time(s):%s", r.Session, len(r.Divergences), b.String())
	}
	return r
}

// ReplayReport is Replay without failing the test on a divergence: it
// returns the report, the accepted divergences moved to Accepted. An
// export or Config that cannot be replayed fails the test.
func ReplayReport(tb TB, export api.Export, c host.Config, opts ...ReplayOption) Report {
	tb.Helper()
	var rc replayConfig
	for _, o := range opts {
		o(&rc)
	}
	ctx := context.Background()
	agents, err := replay.Agents(ctx, c, rc.file)
	if err != nil {
		tb.Fatalf("batontest: %v", err)
	}
	r, err := replay.Run(ctx, export, agents, rc.opts)
	if err != nil {
		tb.Fatalf("batontest: %v", err)
	}
	for _, ok := range rc.accept {
		r.Accept(ok)
	}
	return r
}

// LoadExport reads an export from a file, such as a golden session in
// testdata written by `baton export -f` or Session.SaveExport.
func LoadExport(tb TB, path string) api.Export {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("batontest: %v", err)
	}
	var e api.Export
	if err := json.Unmarshal(b, &e); err != nil {
		tb.Fatalf("batontest: export %s: %v", path, err)
	}
	return e
}

// ExportJSON is the session's export as `baton export` prints it: GET
// /sessions/{id}/export of the kit's operator API, as Owner, indented.
func (s *Session) ExportJSON() []byte {
	s.kit.tb.Helper()
	h := s.kit.App.Operator(func(*http.Request) (string, bool) { return Owner, true }, 0, "")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/sessions/"+s.ID+"/export", nil))
	if w.Code != http.StatusOK {
		s.kit.tb.Fatalf("batontest: export %s: HTTP %d: %s", s.ID, w.Code, w.Body.String())
	}
	var b bytes.Buffer
	if err := json.Indent(&b, w.Body.Bytes(), "", "  "); err != nil {
		s.kit.tb.Fatalf("batontest: export %s: %v", s.ID, err)
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// Export is the session's export (ExportJSON, decoded): every fact and
// every turn stream's parts, for Replay.
func (s *Session) Export() api.Export {
	s.kit.tb.Helper()
	var e api.Export
	if err := json.Unmarshal(s.ExportJSON(), &e); err != nil {
		s.kit.tb.Fatalf("batontest: export %s: %v", s.ID, err)
	}
	return e
}

// SaveExport writes the session's export to path, as `baton export -f`
// does: to record a golden session for a later Replay.
func (s *Session) SaveExport(path string) {
	s.kit.tb.Helper()
	if err := os.WriteFile(path, s.ExportJSON(), 0o644); err != nil {
		s.kit.tb.Fatalf("batontest: %v", err)
	}
}
