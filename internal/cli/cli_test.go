package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/cli"
	"github.com/baton-run/baton/internal/operator"
)

// The demo agent's three texts, one per model step.
var demoTexts = []string{
	"Let me look up the weather in Lisbon before I write anything.",
	"It is clear in Lisbon. I will email the team a short update; an operator has to approve that.",
	"Done: the weather in Lisbon is clear, and the team has the update if the email was approved.",
}

const demoMessage = "Send the team a status update"

// syncBuffer is a bytes.Buffer safe to read while a command writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type result struct {
	code        int
	out, stderr string
}

// vars is the environment of a run; BATON_API is the dev server unless set.
type vars map[string]string

func (v vars) get(k string) string {
	if val, ok := v[k]; ok {
		return val
	}
	if k == "BATON_API" {
		return devAPI
	}
	return ""
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// baton runs the CLI in-process.
func baton(ctx context.Context, env vars, args ...string) result {
	var out, errb bytes.Buffer
	code := cli.Run(ctx, args, strings.NewReader(""), &out, &errb, env.get)
	return result{code, out.String(), errb.String()}
}

// must runs the CLI and fails the test unless it exits 0.
func must(t *testing.T, ctx context.Context, env vars, args ...string) string {
	t.Helper()
	r := baton(ctx, env, args...)
	if r.code != 0 {
		t.Fatalf("baton %s: exit %d, stderr %q", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.out
}

// expect runs the CLI and checks its exit code and that stderr is
// "baton: COMMAND: ..." containing msg.
func expect(t *testing.T, ctx context.Context, env vars, code int, msg string, args ...string) {
	t.Helper()
	r := baton(ctx, env, args...)
	if r.code != code {
		t.Fatalf("baton %s: exit %d, want %d; stderr %q", strings.Join(args, " "), r.code, code, r.stderr)
	}
	if !strings.Contains(r.stderr, msg) || !strings.HasPrefix(r.stderr, "baton: ") {
		t.Fatalf("baton %s: stderr %q, want it to contain %q", strings.Join(args, " "), r.stderr, msg)
	}
	if r.out != "" {
		t.Fatalf("baton %s failed but printed %q", strings.Join(args, " "), r.out)
	}
}

// tailing is a tail running in the background.
type tailing struct {
	out, stderr *syncBuffer
	done        chan int
}

func startTail(ctx context.Context, env vars, args ...string) *tailing {
	tl := &tailing{out: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan int, 1)}
	go func() {
		tl.done <- cli.Run(ctx, append([]string{"tail"}, args...), strings.NewReader(""), tl.out, tl.stderr, env.get)
	}()
	return tl
}

// waitFor waits until the tail's output matches re and returns the match.
func (tl *tailing) waitFor(t *testing.T, ctx context.Context, re *regexp.Regexp) []string {
	t.Helper()
	for {
		if m := re.FindStringSubmatch(tl.out.String()); m != nil {
			return m
		}
		select {
		case code := <-tl.done:
			t.Fatalf("tail exited %d before %s; stdout:\n%s\nstderr:\n%s", code, re, tl.out, tl.stderr)
		case <-ctx.Done():
			t.Fatalf("no %s in the tail's output:\n%s\nstderr:\n%s", re, tl.out, tl.stderr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (tl *tailing) wait(t *testing.T, ctx context.Context) int {
	t.Helper()
	select {
	case code := <-tl.done:
		return code
	case <-ctx.Done():
		t.Fatalf("tail never ended; stdout:\n%s\nstderr:\n%s", tl.out, tl.stderr)
		return 0
	}
}

var approvalLine = regexp.MustCompile(`baton approve (\S+) (\S+)\n`)

// checkTurnRendered checks the demo turn's rendering: each text exactly
// once, the tool calls, the approval and the finish, in order.
func checkTurnRendered(t *testing.T, out string, answered string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	for _, text := range demoTexts {
		// Once, and as a line of its own: a delta repeated at a resume
		// would show before or after it.
		if n, l := strings.Count(out, text), slices.Index(lines, text); n != 1 || l < 0 {
			t.Errorf("text %q rendered %d times, as a line %v; want once, as a line; output:\n%s", text, n, l >= 0, out)
		}
	}
	order := []string{"thinking: The user wants a status update.", demoTexts[0], `→ get_weather({"city":"Lisbon"})`,
		`← {"city":"Lisbon"`, demoTexts[1], "→ send_email(", "needs approval", "⏸ suspended (approval)",
		"▶ resumed (invocation 2)", answered, demoTexts[2], "── finished (stop) ──"}
	at := 0
	for _, want := range order {
		i := strings.Index(out[at:], want)
		if i < 0 {
			t.Fatalf("output lacks %q after offset %d:\n%s", want, at, out)
		}
		at += i + len(want)
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("colour written to a non-terminal:\n%q", out)
	}
}

// TestCommandsAgainstTheDevServer runs each command against the dev server:
// new, send, show, sessions, a tail that follows the demo turn through its
// approval, approve, and the exit codes of refusals.
func TestCommandsAgainstTheDevServer(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	env := vars{}
	id := strings.TrimSpace(must(t, ctx, env, "new", "demo"))
	if !strings.HasPrefix(id, "s_") || strings.ContainsAny(id, " \t\n") {
		t.Fatalf("new printed %q, want the session id alone", id)
	}
	msg := strings.TrimSpace(must(t, ctx, env, "send", id, "Send", "the team", "a status update"))
	if !strings.HasPrefix(msg, "msg_") {
		t.Fatalf("send printed %q, want the message id", msg)
	}

	tl := startTail(ctx, env, id, "--until-idle")
	m := tl.waitFor(t, ctx, approvalLine)
	if m[1] != id {
		t.Fatalf("the approval names session %q, want %q", m[1], id)
	}
	approval := m[2]

	show := must(t, ctx, env, "show", id)
	for _, want := range []string{"status   suspended (approval)", "approval " + approval + ": send_email("} {
		if !strings.Contains(show, want) {
			t.Fatalf("show lacks %q:\n%s", want, show)
		}
	}
	// Two steps are done: the session's usage and the turn's count them.
	if !regexp.MustCompile(`\nusage    tokens in [1-9]\d*, out [1-9]\d*, steps 2, cost —\n(.*\n)*turn     .*\n         usage tokens in [1-9]\d*, out [1-9]\d*, steps 2, cost —\n`).MatchString(show) {
		t.Fatalf("show lacks the session's and the turn's usage of two steps:\n%s", show)
	}
	var st api.Session
	if err := json.Unmarshal([]byte(must(t, ctx, env, "show", "--json", id)), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Pending) != 1 || st.Pending[0].ApprovalID != approval {
		t.Fatalf("show --json pending = %+v, want %s", st.Pending, approval)
	}
	if st.Usage.Steps != 2 || st.Turn == nil || st.Turn.Usage != st.Usage {
		t.Fatalf("show --json usage %+v, turn %+v: want two steps, all the open turn's", st.Usage, st.Turn)
	}

	if out := must(t, ctx, env, "approve", id, approval); out != "approved "+approval+" of session "+id+"\n" {
		t.Fatalf("approve printed %q", out)
	}
	if code := tl.wait(t, ctx); code != 0 {
		t.Fatalf("tail --until-idle exited %d; stderr:\n%s", code, tl.stderr)
	}
	checkTurnRendered(t, tl.out.String(), "✓ approval "+approval+" approved")

	// The turn is over: answering again, cancelling and settling conflict.
	expect(t, ctx, env, cli.ExitConflict, "baton: approve: approval \""+approval+"\" is not pending", "approve", id, approval)
	expect(t, ctx, env, cli.ExitConflict, "is not pending", "deny", id, approval, "--reason", "too late")
	expect(t, ctx, env, cli.ExitConflict, "baton: cancel: the session has no open turn to cancel", "cancel", id)
	expect(t, ctx, env, cli.ExitConflict, "awaits no verdict", "verdict", id, "ex_nope", "rerun")

	// sessions lists it with its usage, as a table and as JSON.
	list := must(t, ctx, env, "sessions")
	if !regexp.MustCompile(`(?m)^` + id + `\s+demo\s+idle\s+\S+Z\s+1\s+[1-9]\d*/[1-9]\d*\s+3\s+—$`).MatchString(list) {
		t.Fatalf("sessions lacks a row for %s with its usage:\n%s", id, list)
	}
	var all []api.Session
	if err := json.Unmarshal([]byte(must(t, ctx, env, "sessions", "--json")), &all); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range all {
		if s.ID == id {
			found = s.Turns == 1 && s.Usage.OutputTokens > 0 && s.Status == "idle"
		}
	}
	if !found {
		t.Fatalf("sessions --json lacks %s idle with usage: %+v", id, all)
	}

	// An idle session's tail --until-idle ends at once, having shown no
	// turn, and says why it had nothing to follow (it printed nothing);
	// --json prints no notes.
	r := baton(ctx, env, "tail", id, "--until-idle")
	if r.code != 0 || !strings.Contains(r.out, "is idle with nothing waiting") || strings.Contains(r.out, "turn ") {
		t.Fatalf("tail --until-idle of an idle session: exit %d, out %q, stderr %q", r.code, r.out, r.stderr)
	}
	if r := baton(ctx, env, "tail", "--json", id, "--until-idle"); r.code != 0 || r.out != "" {
		t.Fatalf("tail --json --until-idle of an idle session: exit %d, out %q, stderr %q", r.code, r.out, r.stderr)
	}
}

// TestTailResumesAfterADroppedConnection puts a TCP proxy in front of the
// dev server that cuts the first two event streams mid-event, and then,
// while the turn is suspended for approval, the stream being held. The
// tail reconnects with Last-Event-ID each time, renders every text exactly
// once, follows the turn through its suspension, shows the denial, and
// ends with the turn.
func TestTailResumesAfterADroppedConnection(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	// The first stream is cut in the middle of a part's JSON, the second
	// after a whole data line but before the blank line ending its event.
	proxy := startCutProxy(t, strings.TrimPrefix(devAPI, "http://"), midLine(500), beforeBlank(300))
	env := vars{"BATON_API": proxy.URL()}
	id := strings.TrimSpace(must(t, ctx, env, "new", "demo"))
	must(t, ctx, env, "send", id, demoMessage)

	tl := startTail(ctx, env, id, "--until-idle")
	approval := tl.waitFor(t, ctx, approvalLine)[2]
	tl.waitFor(t, ctx, regexp.MustCompile(`⏸ suspended \(approval\)\n`))
	if n := proxy.DropStreams(); n != 1 {
		t.Fatalf("dropped %d event streams during the suspension, want the tail's one", n)
	}
	if out := must(t, ctx, env, "deny", id, approval, "--reason", "not today"); out != "denied "+approval+" of session "+id+"\n" {
		t.Fatalf("deny printed %q", out)
	}
	if code := tl.wait(t, ctx); code != 0 {
		t.Fatalf("tail exited %d; stderr:\n%s", code, tl.stderr)
	}
	if proxy.Cuts() != 2 {
		t.Fatalf("the proxy cut %d connections, want 2", proxy.Cuts())
	}
	resumes := regexp.MustCompile(`(?i)\r\nLast-Event-Id: \d+\.\d+\r\n`).FindAllString(proxy.Requests(), -1)
	if len(resumes) < 3 {
		t.Fatalf("%d stream requests resumed with Last-Event-ID, want at least 3", len(resumes))
	}
	if n := strings.Count(tl.stderr.String(), "resuming after"); n != 3 {
		t.Fatalf("tail noted %d resumptions, want 3:\n%s", n, tl.stderr)
	}
	t.Logf("the tail's notes:\n%s", tl.stderr)
	out := tl.out.String()
	checkTurnRendered(t, out, "✗ approval "+approval+" denied: not today")
	if !strings.Contains(out, "← denied") {
		t.Fatalf("the denied tool call is not shown:\n%s", out)
	}
}

// TestApproveWithInputAndRespond: approve --input runs the call with the
// operator's input, which the tool's schema checks first (a refused one
// exits 2 and changes nothing); respond answers a call by hand.
func TestApproveWithInputAndRespond(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	env := vars{}
	approvalOf := func(id string) string {
		t.Helper()
		must(t, ctx, env, "send", id, demoMessage)
		tctx, cancel := context.WithCancel(ctx)
		defer cancel()
		return startTail(tctx, env, "--json", id).waitFor(t, tctx, regexp.MustCompile(`"approvalId":"([^"]+)"`))[1]
	}
	id := strings.TrimSpace(must(t, ctx, env, "new", "demo"))
	approval := approvalOf(id)
	expect(t, ctx, env, cli.ExitUsage, "the edited input", "approve", id, approval, "--input", `{"to":5,"subject":"s"}`)
	expect(t, ctx, env, cli.ExitUsage, "baton: approve: --input is not JSON", "approve", id, approval, "--input", `{"to":`)
	edited := `{"to":"ops@example.com","subject":"Edited by ops"}`
	jsonTail := startTail(ctx, env, "--json", "--until-idle", id)
	textTail := startTail(ctx, env, "--until-idle", "--color", "never", id)
	jsonTail.waitFor(t, ctx, regexp.MustCompile(`"approvalId"`))
	textTail.waitFor(t, ctx, regexp.MustCompile(`needs approval`))
	if out := must(t, ctx, env, "approve", id, approval, "--input", edited, "--reason", "wrong team"); out != "approved with edits "+approval+" of session "+id+"\n" {
		t.Fatalf("approve --input printed %q", out)
	}
	for _, tl := range []*tailing{jsonTail, textTail} {
		if code := tl.wait(t, ctx); code != 0 {
			t.Fatalf("tail exited %d; stderr:\n%s", code, tl.stderr)
		}
	}
	if out := jsonTail.out.String(); !strings.Contains(out, `"data-edited"`) || !strings.Contains(out, `"to":"ops@example.com"`) {
		t.Fatalf("the stream does not show the edit:\n%s", out)
	}
	if out := textTail.out.String(); !strings.Contains(out, `✎ edited by local to {"to":"ops@example.com","subject":"Edited by ops"}`) {
		t.Fatalf("tail does not show the edit:\n%s", out)
	}

	id2 := strings.TrimSpace(must(t, ctx, env, "new", "demo"))
	approval2 := approvalOf(id2)
	tl := startTail(ctx, env, "--json", "--until-idle", id2)
	tl.waitFor(t, ctx, regexp.MustCompile(`"approvalId"`))
	var out, errb bytes.Buffer
	if code := cli.Run(ctx, []string{"respond", id2, approval2, "-"}, strings.NewReader(`{"sent":false,"note":"told them in person"}`), &out, &errb, env.get); code != 0 ||
		out.String() != "answered by hand "+approval2+" of session "+id2+"\n" {
		t.Fatalf("respond: exit %d, out %q, stderr %q", code, out.String(), errb.String())
	}
	if code := tl.wait(t, ctx); code != 0 {
		t.Fatalf("tail exited %d; stderr:\n%s", code, tl.stderr)
	}
	if out := tl.out.String(); !strings.Contains(out, "told them in person") {
		t.Fatalf("the stream does not show the operator's result:\n%s", out)
	}
}

// TestTailJSON: --json prints each part once as a JSON line with its turn
// and cursor.
func TestTailJSON(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	env := vars{}
	id := strings.TrimSpace(must(t, ctx, env, "new", "demo"))
	must(t, ctx, env, "send", id, demoMessage)
	tl := startTail(ctx, env, "--json", "--until-idle", id)
	var approval string
	re := regexp.MustCompile(`"approvalId":"([^"]+)"`)
	approval = tl.waitFor(t, ctx, re)[1]
	must(t, ctx, env, "approve", id, approval)
	if code := tl.wait(t, ctx); code != 0 {
		t.Fatalf("tail --json exited %d; stderr:\n%s", code, tl.stderr)
	}
	cursors := map[string]bool{}
	var text strings.Builder
	for line := range strings.SplitSeq(strings.TrimSpace(tl.out.String()), "\n") {
		var e struct {
			Turn   string `json:"turn"`
			Cursor string `json:"cursor"`
			Part   struct {
				Type  string `json:"type"`
				Delta string `json:"delta"`
			} `json:"part"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("tail --json line %q: %v", line, err)
		}
		if e.Turn == "" || e.Cursor == "" || cursors[e.Cursor] {
			t.Fatalf("line %q: want a turn and a new cursor", line)
		}
		cursors[e.Cursor] = true
		if e.Part.Type == "text-delta" {
			text.WriteString(e.Part.Delta)
		}
	}
	if text.String() != strings.Join(demoTexts, "") {
		t.Fatalf("the text deltas are %q", text.String())
	}

	if r := baton(ctx, vars{"NO_COLOR": "1"}, "tail", id, "--until-idle", "--color", "sometimes"); r.code != cli.ExitUsage {
		t.Fatalf("--color sometimes: exit %d", r.code)
	}
}

// TestCancelAWaitingTurn cancels a turn suspended for approval; the tail,
// in colour, follows it to its end.
func TestCancelAWaitingTurn(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	env := vars{}
	id := strings.TrimSpace(must(t, ctx, env, "new", "demo"))
	must(t, ctx, env, "send", id, demoMessage)
	tl := startTail(ctx, env, id, "--until-idle", "--color", "always")
	approval := regexp.MustCompile(`baton approve \S+ (\S+)\n`).FindStringSubmatch(tl.waitFor(t, ctx, regexp.MustCompile(`baton approve \S+ \S+\n`))[0])[1]
	if !strings.Contains(tl.out.String(), "\x1b[36m→\x1b[0m \x1b[1mget_weather\x1b[0m") {
		t.Fatalf("--color always: no styled tool call:\n%q", tl.out)
	}
	if out := must(t, ctx, env, "cancel", id, "--reason", "changed my mind"); out != "cancelled the open turn of session "+id+"\n" {
		t.Fatalf("cancel printed %q", out)
	}
	if code := tl.wait(t, ctx); code != 0 {
		t.Fatalf("tail exited %d; stderr:\n%s", code, tl.stderr)
	}
	if strings.Contains(tl.out.String(), demoTexts[2]) {
		t.Fatalf("a cancelled turn went on:\n%s", tl.out)
	}
	if !strings.Contains(tl.out.String(), "turn "+st0Turn(t, tl.out.String())+" cancelled by local: changed my mind") {
		t.Fatalf("the tail does not say why the turn ended:\n%s", tl.out)
	}
	expect(t, ctx, env, cli.ExitConflict, "is not pending", "approve", id, approval)
	var st api.Session
	if err := json.Unmarshal([]byte(must(t, ctx, env, "show", id, "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Status != "idle" || st.Last != "turn.cancelled" {
		t.Fatalf("after cancel: status %s, last %s", st.Status, st.Last)
	}
}

// TestUsageAndNotFound: bad command lines exit 2 without a request, and
// what does not exist (or is another caller's) exits 3.
func TestUsageAndNotFound(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	env := vars{}
	for _, args := range [][]string{
		{"new"}, {"new", "a", "b"}, {"send", "s_x"}, {"send", "s_x", " "}, {"tail"}, {"approve", "s_x"},
		{"deny", "s_x", "ap", "extra"}, {"respond", "s_x", "ap"}, {"respond", "s_x", "ap", "not json"},
		{"approve", "s_x", "ap", "--input", "{"}, {"deny", "s_x", "ap", "--input", "{}"}, {"verdict", "s_x", "ex"}, {"verdict", "s_x", "ex", "maybe"},
		{"cancel"}, {"sessions", "extra"}, {"sessions", "--bogus"}, {"show", "--json=maybe", "s_x"},
		{"bogus"}, {"--api", "ftp://x", "sessions"}, {"show", "s_x", "--api", "not a url"},
	} {
		r := baton(ctx, vars{"BATON_API": "http://127.0.0.1:1"}, args...)
		if r.code != cli.ExitUsage || !strings.HasPrefix(r.stderr, "baton: ") || strings.Count(r.stderr, "\n") != 1 || r.out != "" {
			t.Errorf("baton %q: exit %d, stderr %q, out %q; want exit 2 and one line", args, r.code, r.stderr, r.out)
		}
	}
	if r := baton(ctx, env); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "usage: baton") {
		t.Errorf("no command: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help", "nosuch"}} {
		if r := baton(ctx, env, args...); r.code != 0 || r.out != cli.Usage {
			t.Errorf("baton %q: exit %d, stderr %q; want the usage and 0", args, r.code, r.stderr)
		}
	}
	help := must(t, ctx, env, "help")
	for _, want := range append(cli.Commands, "BATON_API", "BATON_TOKEN", "Exit codes", "--until-idle") {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	// The server refuses an unknown agent as bad input.
	expect(t, ctx, env, cli.ExitUsage, `baton: new: unknown agent "nope"`, "new", "nope")

	expect(t, ctx, env, cli.ExitNotFound, "baton: show: session not found", "show", "s_nosuch")
	expect(t, ctx, env, cli.ExitNotFound, "baton: send: session not found", "send", "s_nosuch", "hi")
	expect(t, ctx, env, cli.ExitNotFound, "baton: tail: session not found", "tail", "s_nosuch")
	expect(t, ctx, env, cli.ExitNotFound, "session not found", "approve", "s_nosuch", "ap_x")
	expect(t, ctx, env, cli.ExitNotFound, "session not found", "cancel", "s_nosuch")
	expect(t, ctx, env, cli.ExitNotFound, "session not found", "verdict", "s_nosuch", "ex_x", "abandon")

	// Another operator's session is not found either, and not listed.
	id := strings.TrimSpace(must(t, ctx, env, "new", "demo"))
	other := vars{"BATON_OPERATOR": "someone-else"}
	expect(t, ctx, other, cli.ExitNotFound, "session not found", "show", id)
	expect(t, ctx, other, cli.ExitNotFound, "session not found", "send", id, "hello")
	if out := must(t, ctx, other, "sessions"); strings.Contains(out, id) {
		t.Fatalf("another operator lists %s:\n%s", id, out)
	}
	// Flags after the arguments, and --api on the command line over BATON_API.
	if out := must(t, ctx, vars{"BATON_API": "http://127.0.0.1:1"}, "show", id, "--api", devAPI); !strings.Contains(out, id) {
		t.Fatalf("show --api: %q", out)
	}
	if out := must(t, ctx, vars{"BATON_API": "http://127.0.0.1:1"}, "--api", devAPI, "show", id); !strings.Contains(out, id) {
		t.Fatalf("--api show: %q", out)
	}
	// "--" ends the flags: the text may start with a dash.
	if out := must(t, ctx, env, "send", id, "--", "--json", "-x"); !strings.HasPrefix(out, "msg_") {
		t.Fatalf("send -- --json -x printed %q", out)
	}
	resp, err := http.Get(devAPI + "/sessions/" + id + "/facts?after=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var facts api.Facts
	if err := json.NewDecoder(resp.Body).Decode(&facts); err != nil {
		t.Fatal(err)
	}
	if len(facts.Facts) == 0 || facts.Facts[0].Message == nil || facts.Facts[0].Message.Text != "--json -x" {
		t.Fatalf("the message sent after -- is %+v", facts.Facts)
	}
}

// TestUnreachableAndServerErrors: no server exits 6, a 5xx exits 1 with
// the server's message, and a body that is not JSON still gives a message.
func TestUnreachableAndServerErrors(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	expect(t, ctx, vars{"BATON_API": closed}, cli.ExitUnreachable, "baton: sessions: cannot reach "+closed, "sessions")
	expect(t, ctx, vars{"BATON_API": closed}, cli.ExitUnreachable, "cannot reach", "tail", "s_x")

	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/plain") {
			http.Error(w, "bad gateway", http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":"the session store is throttled or failing; retry later"}`))
	}))
	defer failing.Close()
	expect(t, ctx, vars{"BATON_API": failing.URL}, cli.ExitError,
		"baton: new: the session store is throttled or failing; retry later\n", "new", "demo")
	expect(t, ctx, vars{"BATON_API": failing.URL}, cli.ExitError, "baton: show: bad gateway (HTTP 502)", "show", "plain")
}

// TestUnauthorized puts a bearer-token gate in front of the dev server:
// BATON_TOKEN is sent as the bearer token, and 401 and 403 exit 5.
func TestUnauthorized(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	target, _ := url.Parse(devAPI)
	backend := httputil.NewSingleHostReverseProxy(target)
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("Authorization") {
		case "Bearer good.jwt.token":
			backend.ServeHTTP(w, r)
		case "Bearer read.only.token":
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"error":"forbidden"}`))
		default:
			w.Header().Set("WWW-Authenticate", "Bearer")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":"authentication required"}`))
		}
	}))
	defer gate.Close()
	expect(t, ctx, vars{"BATON_API": gate.URL}, cli.ExitUnauthorized, "baton: new: authentication required", "new", "demo")
	expect(t, ctx, vars{"BATON_API": gate.URL, "BATON_TOKEN": "read.only.token"}, cli.ExitUnauthorized, "baton: sessions: forbidden", "sessions")
	expect(t, ctx, vars{"BATON_API": gate.URL, "BATON_TOKEN": "bad"}, cli.ExitUnauthorized, "authentication required", "tail", "s_x")
	id := strings.TrimSpace(must(t, ctx, vars{"BATON_API": gate.URL, "BATON_TOKEN": "good.jwt.token"}, "new", "demo"))
	if !strings.HasPrefix(id, "s_") {
		t.Fatalf("new through the gate printed %q", id)
	}
}

// st0Turn is the id of the first turn a tail's output shows.
func st0Turn(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`── turn (\S+) ──`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no turn in the output:\n%s", out)
	}
	return m[1]
}

// TestTailFollowsNewTurnsUntilInterrupted: a tail started on an idle
// session waits, shows the message "-" read from stdin and the turn it
// starts, and exits 130 when its context ends (Ctrl-C).
func TestTailFollowsNewTurnsUntilInterrupted(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	id := strings.TrimSpace(must(t, ctx, vars{}, "new", "demo"))
	tctx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	tl := startTail(tctx, vars{}, id)
	tl.waitFor(t, ctx, regexp.MustCompile(`· session \S+ has no open turn; waiting for one\n`))

	var out, errb bytes.Buffer
	if code := cli.Run(ctx, []string{"send", id, "-"}, strings.NewReader("from stdin\nline two\n"), &out, &errb, vars{}.get); code != 0 {
		t.Fatalf("send -: exit %d, %s", code, errb.String())
	}
	tl.waitFor(t, ctx, regexp.MustCompile(`› local: from stdin\n  line two\n── turn \S+ ──\n`))
	tl.waitFor(t, ctx, approvalLine)
	must(t, ctx, vars{}, "cancel", id)
	tl.waitFor(t, ctx, regexp.MustCompile(`cancelled by local\n`))
	interrupt()
	if code := tl.wait(t, ctx); code != cli.ExitInterrupted || tl.stderr.String() != "baton: tail: interrupted\n" {
		t.Fatalf("interrupted tail: exit %d, stderr %q", code, tl.stderr)
	}

	// A body over the API's limit is refused as bad input.
	big := strings.Repeat("x", operator.DefaultMaxBody+1)
	errb.Reset()
	if code := cli.Run(ctx, []string{"send", id, "-"}, strings.NewReader(big), &out, &errb, vars{}.get); code != cli.ExitUsage {
		t.Fatalf("send of %d bytes: exit %d, stderr %q", len(big), code, errb.String())
	}
}
