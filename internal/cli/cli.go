package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/claims/claimscli"
	"github.com/baton-run/baton/pkg/reducer"
)

// Exit codes of Run.
const (
	ExitOK           = 0   // success
	ExitError        = 1   // a server error (5xx) or any other failure
	ExitUsage        = 2   // bad flags or arguments, or input the server refused (400, 413, 422)
	ExitNotFound     = 3   // no such session, turn, approval or execution (404)
	ExitConflict     = 4   // not allowed in the session's state, e.g. an approval not pending (409), or a callback expired (410)
	ExitUnauthorized = 5   // missing, bad or insufficient credentials (401, 403)
	ExitUnreachable  = 6   // no answer from the server
	ExitInterrupted  = 130 // interrupted (Ctrl-C)
)

// Commands are the subcommands Run knows, besides help.
var Commands = []string{"sessions", "show", "new", "send", "tail", "approve", "deny", "respond", "complete", "heartbeat", "verdict", "guardrails", "release", "orphans", "cancel", "turns", "rewind", "fork", "export", "delete", "replay", "completion"}

// Usage is the text `baton help` prints.
const Usage = `usage: baton [--api URL] COMMAND [ARGS] [FLAGS]
       baton --version

Local:
  baton dev [--addr A] [--data DIR] [--agents FILE] [--tick D] [--metrics]
                                            run the dev server (emulator, demo agent, API on 127.0.0.1:8080);
                                            --agents (default $BATON_AGENTS) serves an agent file's agents;
                                            --metrics writes CloudWatch EMF metric lines to stderr
  baton provision                           create the table, bucket and queues at AWS_ENDPOINT_URL
  baton init DIR [-module PATH] [-replace BATON_DIR] [-version V] [-agent NAME]
                                            write a new project that imports baton; a baton built
                                            from a checkout uses that checkout (no flag needed)
  baton template [--diff | -w]              a project's template.yaml and Makefile as this baton derives them
  baton replay EXPORT [--agents FILE] [--json] [--accept KIND,...] [--run-reads]
                                            replay an exported session (baton export -f; "-" reads stdin) against
                                            the agents of FILE (default $BATON_AGENTS, else the demo agent): the recording is
                                            the model and gives every tool its result (nothing runs again);
                                            prints each divergence (tool-gone, tool-refused, rule-changed,
                                            claim-changed, steps-changed, result-changed, answer-changed,
                                            outcome-changed) and exits 1 on any not accepted

Client of the operator API:
  baton sessions [-o table|json|yaml]       list your sessions: id, agent, status, updated, usage
                                            (cost "—" when the agent has no prices); --json is -o json
  baton show SESSION [-o table|json|yaml]   a session's status, usage and cost, open turn, pending approvals,
                                            uncertain execution, timer, spend limit, schedule
  baton new AGENT                           create a session; prints its id
  baton send SESSION TEXT...                post a message (TEXT "-" reads stdin); prints the message id
  baton tail SESSION [--until-idle] [--json] [--color auto|always|never]
                                            follow the session's turns live: text, reasoning, tool calls,
                                            approvals, suspensions; resumes after a dropped connection
  baton approve SESSION APPROVAL [--input JSON] [--reason R]
  baton deny SESSION APPROVAL [--reason R]  answer a pending approval; --input approves with that input
                                            instead of the model's (JSON "-" reads stdin), which the
                                            tool's schema and rules check again
  baton respond SESSION APPROVAL JSON [--reason R]
                                            answer the call by hand: the model gets JSON ("-" reads
                                            stdin) as its result, and the tool never runs
  baton complete TOKEN JSON|--error TEXT    complete a tool call waiting for its callback, as the holder of
                                            its token: the model gets JSON ("-" reads stdin) as the result,
                                            or TEXT as the call's error
  baton complete SESSION CALL JSON|--error TEXT [--reason R]
                                            the same by hand, as the session's owner, without the token:
                                            CALL is the tool call id show lists under callback
  baton heartbeat TOKEN [--json]            renew the callback's heartbeat timeout; prints its new deadline
  baton verdict SESSION EXECUTION rerun|abandon
                                            settle an uncertain execution
  baton guardrails SESSION [-o table|json|yaml]
                                            the session's guardrail decisions (allow, block, redact,
                                            escalate), each a guardrail.decided fact; approve or deny
                                            an escalation as any approval
  baton release SESSION GRANT               release the resource claims a grant holds after its turn ended
                                            (cancelled while its execution was uncertain), or that the
                                            deleted session SESSION left orphaned
  baton orphans [-o table|json|yaml]        the grants your deleted sessions left held (orphaned)
  baton cancel SESSION [--reason R]         cancel the open turn
  baton raise SESSION [--turn-cost USD] [--turn-input-tokens N] [--turn-output-tokens N]
              [--session-cost USD] [--session-input-tokens N] [--session-output-tokens N]
                                            raise the spend caps of a turn suspended at a limit
  baton wake SESSION [--at RFC3339]         end (or, with --at, move) the timer of a turn waiting on one
  baton schedule SESSION --cron "M H DoM Mon DoW" --text TEXT
                                            post TEXT at each occurrence (UTC); replaces any schedule
  baton schedule SESSION --clear            remove the schedule
  baton turns SESSION [--json]              the session's turns: id, how each ended, steps (the points below)
  baton rewind SESSION --turn T [--step N] | --before T [--cancel] [--json]
                                            take the session back: just after turn T, within it after N
                                            steps (0 answers its messages afresh), or just before it; the
                                            facts after stay; lists the side effects after the point
                                            (refused while a turn is open, unless --cancel)
  baton fork SESSION --turn T [--step N] | --before T [--cancel] [--json]
                                            a new session holding SESSION's conversation at that point;
                                            prints its id; SESSION is unchanged
  baton export SESSION [-f FILE]            every fact and turn stream of the session, one JSON bundle,
                                            to stdout or FILE
  baton delete SESSION                      delete the session: facts, streams, snapshots, receipts
                                            (refused while a turn is open; cancel it first)
  baton completion bash|zsh|fish            print the shell's completion script
  baton help [COMMAND]                      this text, or COMMAND's help (as COMMAND --help)

Flags go before or after the arguments; "--" ends them. Every client command takes --api.

Environment:
  BATON_API       the operator API (default ` + DefaultAPI + `, the dev server); --api overrides it
  BATON_TOKEN     a JWT, sent as "Authorization: Bearer ..."
  BATON_OPERATOR  the dev server's caller identity (X-Baton-Operator)
  NO_COLOR        set to turn colour off in tail

Exit codes:
  0    ok (tail --until-idle: the session became idle)
  1    server error (5xx) or other failure
  2    usage: bad flags or arguments, or input the server refused (400, 413, 422)
  3    not found (404)
  4    conflict (409): not allowed in the session's state, e.g. an approval not pending,
       or a callback already completed; or gone (410): a callback past its deadline
  5    unauthorized (401, 403)
  6    the server could not be reached
  130  interrupted

Errors go to stderr as "baton: COMMAND: MESSAGE", MESSAGE being the server's when it answered.
`

// helpRequest is a command line asking a command for its help (-h,
// -help or --help among its flags): the command does nothing else.
type helpRequest struct{ fs *flag.FlagSet }

func (e *helpRequest) Error() string { return "help requested" }
func (e *helpRequest) Unwrap() error { return flag.ErrHelp }

// Help returns the help of command name (as "baton help NAME" and "baton
// NAME --help" print it): its lines of Usage, then what every client
// command shares. False for a command Usage does not list.
func Help(name string) (string, bool) {
	if name == "" || strings.ContainsAny(name, " \t") {
		return "", false
	}
	var b strings.Builder
	in := false
	for line := range strings.Lines(Usage) {
		switch {
		case strings.HasPrefix(line, "  baton "+name+" ") || strings.TrimSpace(line) == "baton "+name:
			in = true
		case in && strings.HasPrefix(line, "      "):
			// A continuation of the command's lines.
		default:
			in = false
		}
		if in {
			b.WriteString(line)
		}
	}
	if b.Len() == 0 {
		return "", false
	}
	out := "usage:\n" + b.String()
	if name != "dev" && name != "provision" {
		out += "\nFlags go before or after the arguments; \"--\" ends them.\n" +
			"The operator API is --api, else BATON_API, else " + DefaultAPI + "; BATON_TOKEN is sent as a bearer token.\n"
	}
	return out, true
}

// usageError is a command line the CLI cannot run.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// ExitCode is the exit code for an error a command returned.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	if _, ok := errors.AsType[*usageError](err); ok {
		return ExitUsage
	}
	if _, ok := errors.AsType[*api.UnreachableError](err); ok {
		return ExitUnreachable
	}
	if ae, ok := errors.AsType[*api.StatusError](err); ok {
		switch ae.Status {
		case http.StatusNotFound:
			return ExitNotFound
		case http.StatusConflict, http.StatusGone: // 410: a callback expired
			return ExitConflict
		case http.StatusUnauthorized, http.StatusForbidden:
			return ExitUnauthorized
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
			return ExitUsage
		}
		return ExitError
	}
	if errors.Is(err, context.Canceled) {
		return ExitInterrupted
	}
	return ExitError
}

// env is what a command runs with.
type env struct {
	stdout, stderr io.Writer
	stdin          io.Reader
	getenv         func(string) string
	api            string // from the global --api, or ""
	poll           time.Duration
	replayer       Replayer // baton replay's engine; nil in Run
}

// Run runs the client command args (args[0] is the command) and returns its
// exit code. Output goes to stdout, errors to stderr as
// "baton: COMMAND: MESSAGE"; stdin is the TEXT "-" of send; getenv reads
// the environment (BATON_API, BATON_TOKEN, BATON_OPERATOR, NO_COLOR). ctx
// ends a command early, such as a tail on Ctrl-C.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	e := &env{stdout: stdout, stderr: stderr, stdin: stdin, getenv: getenv, poll: 500 * time.Millisecond}
	// A global --api may come before the command.
	global := flag.NewFlagSet("baton", flag.ContinueOnError)
	global.SetOutput(io.Discard)
	global.StringVar(&e.api, "api", "", "")
	version := global.Bool("version", false, "")
	if err := global.Parse(args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, Usage)
		return ExitOK
	} else if err != nil {
		fmt.Fprintf(stderr, "baton: %v\n%s", err, Usage)
		return ExitUsage
	}
	args = global.Args()
	if *version {
		fmt.Fprintln(stdout, Version())
		return ExitOK
	}
	if len(args) == 0 {
		fmt.Fprint(stderr, Usage)
		return ExitUsage
	}
	name := args[0]
	var err error
	switch name {
	case "version":
		fmt.Fprintln(stdout, Version())
		return ExitOK
	case "help", "-h", "--help":
		if h, ok := Help(strings.Join(args[1:], " ")); ok && len(args) == 2 {
			fmt.Fprint(stdout, h)
		} else {
			fmt.Fprint(stdout, Usage)
		}
		return ExitOK
	default:
		var known bool
		if known, err = e.command(ctx, name, args[1:]); !known {
			fmt.Fprintf(stderr, "baton: unknown command %q (see baton help)\n", name)
			return ExitUsage
		}
	}
	return e.exit(name, err)
}

// command runs the client command name with its args; known is false for
// a command there is none of.
func (e *env) command(ctx context.Context, name string, args []string) (known bool, err error) {
	answer := func(decision string) func(context.Context, []string) error {
		return func(ctx context.Context, args []string) error { return e.answer(ctx, decision, args) }
	}
	run, ok := map[string]func(context.Context, []string) error{
		"sessions": e.sessions, "show": e.show, "new": e.newSession, "send": e.send, "tail": e.tail,
		"approve": answer("approve"), "deny": answer("deny"), "respond": answer("respond"),
		"complete": e.complete, "heartbeat": e.heartbeat, "verdict": e.verdict, "guardrails": e.guardrails, "release": e.release, "orphans": e.orphans, "cancel": e.cancel,
		"raise": e.raise, "wake": e.wake, "schedule": e.schedule, "export": e.export, "delete": e.remove, "replay": e.replay,
		"turns": e.turns, "rewind": e.rewind, "fork": e.fork,
		"completion": func(_ context.Context, args []string) error { return e.completion(args) },
	}[name]
	if !ok {
		return false, nil
	}
	return true, run(ctx, args)
}

// exit reports how command name ended, on stdout for help asked of it or
// on stderr for an error, and returns the exit code.
func (e *env) exit(name string, err error) int {
	stdout, stderr := e.stdout, e.stderr
	if err == nil {
		return ExitOK
	}
	if hr, ok := errors.AsType[*helpRequest](err); ok {
		// Help asked of a command: its help, and nothing done.
		h, _ := Help(name)
		fmt.Fprint(stdout, h)
		fmt.Fprintln(stdout, "\nFlags:")
		hr.fs.SetOutput(stdout)
		hr.fs.PrintDefaults()
		return ExitOK
	}
	code := ExitCode(err)
	if code == ExitInterrupted {
		fmt.Fprintf(stderr, "baton: %s: interrupted\n", name)
		return code
	}
	if _, ok := errors.AsType[*usageError](err); ok {
		fmt.Fprintf(stderr, "baton: %s: %v (see baton help)\n", name, err)
		return code
	}
	fmt.Fprintf(stderr, "baton: %s: %v\n", name, err)
	return code
}

// command is one subcommand's flags and positional arguments.
type command struct {
	fs     *flag.FlagSet
	api    string
	json   bool
	output string // -o, where the output is tabular
}

func (e *env) flags(name string, withJSON bool) *command {
	c := &command{fs: flag.NewFlagSet(name, flag.ContinueOnError)}
	c.fs.SetOutput(io.Discard)
	c.fs.StringVar(&c.api, "api", "", "the operator API")
	if withJSON {
		c.fs.BoolVar(&c.json, "json", false, "print JSON (on sessions and show, as -o json)")
	}
	return c
}

// parse parses flags wherever they stand among args and returns the
// positional arguments, checking there are exactly want of them, or at
// least want when rest is true.
func (c *command) parse(args []string, want int, rest bool, names string) ([]string, error) {
	pos, err := ParseFlags(c.fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, &helpRequest{fs: c.fs}
	} else if err != nil {
		return nil, usagef("%v", err)
	}
	if len(pos) < want || (!rest && len(pos) > want) {
		return nil, usagef("want %s, got %d argument(s)", names, len(pos))
	}
	for i, p := range pos[:want] {
		if strings.TrimSpace(p) == "" {
			return nil, usagef("argument %d of %s is empty", i+1, names)
		}
	}
	return pos, nil
}

// ParseFlags parses fs's flags wherever they stand among args, before,
// between or after the positional arguments, and returns the positional
// arguments in order; everything after "--" is positional. Every baton
// command parses its command line with it. It returns fs.Parse's error
// (flag.ErrHelp when help was asked for).
func ParseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		left := fs.Args()
		// Parse stops at the first positional argument, or after "--".
		if n := len(args) - len(left); n > 0 && args[n-1] == "--" {
			return append(pos, left...), nil
		}
		if len(left) == 0 {
			return pos, nil
		}
		pos = append(pos, left[0])
		args = left[1:]
	}
}

// client returns the API client: --api of the command, then the global
// --api, then BATON_API, then DefaultAPI.
func (e *env) client(c *command) (*api.Client, error) {
	base := c.api
	if base == "" {
		base = e.api
	}
	if base == "" {
		base = e.getenv("BATON_API")
	}
	if base == "" {
		base = DefaultAPI
	}
	return newClient(base, e.getenv("BATON_TOKEN"), e.getenv("BATON_OPERATOR"))
}

func (e *env) printJSON(v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (e *env) sessions(ctx context.Context, args []string) error {
	c := e.flags("sessions", true)
	c.outputFlag()
	if _, err := c.parse(args, 0, false, "no arguments"); err != nil {
		return err
	}
	if _, err := c.format(); err != nil {
		return err
	}
	cl, err := e.client(c)
	if err != nil {
		return err
	}
	var all []api.Summary
	for cursor := ""; ; {
		page, err := cl.Sessions(ctx, api.MaxListLimit, cursor)
		if err != nil {
			return err
		}
		all = append(all, page.Sessions...)
		if page.Next == "" || page.Next == cursor {
			break
		}
		cursor = page.Next
	}
	// The listing carries no usage; each session's state does.
	full := make([]api.Session, 0, len(all))
	for _, s := range all {
		st, err := cl.Session(ctx, s.ID)
		if ae, ok := errors.AsType[*api.StatusError](err); ok && ae.Status == http.StatusNotFound {
			continue // gone since it was listed
		}
		if err != nil {
			return err
		}
		full = append(full, st)
	}
	return e.emit(c, full, func() error {
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tAGENT\tSTATUS\tUPDATED\tTURNS\tTOKENS IN/OUT\tSTEPS\tCOST")
		for _, s := range full {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d/%d\t%d\t%s\n", s.ID, s.Agent, statusText(s), s.Updated.UTC().Format(time.RFC3339),
				s.Turns, s.Usage.InputTokens, s.Usage.OutputTokens, s.Usage.Steps, costText(s.Usage.CostMicroUSD))
		}
		return tw.Flush()
	})
}

// statusText is a session's status, with the cause of a suspension.
func statusText(s api.Session) string {
	if s.Status == reducer.Suspended && s.Turn != nil && s.Turn.Cause != "" {
		return fmt.Sprintf("%s (%s)", s.Status, s.Turn.Cause)
	}
	return string(s.Status)
}

func (e *env) show(ctx context.Context, args []string) error {
	c := e.flags("show", true)
	c.outputFlag()
	pos, err := c.parse(args, 1, false, "SESSION")
	if err != nil {
		return err
	}
	if _, err := c.format(); err != nil {
		return err
	}
	cl, err := e.client(c)
	if err != nil {
		return err
	}
	s, err := cl.Session(ctx, pos[0])
	if err != nil {
		return err
	}
	return e.emit(c, s, func() error { e.showTable(s); return nil })
}

// showTable prints a session's state for a person.
func (e *env) showTable(s api.Session) {
	w := e.stdout
	fmt.Fprintf(w, "session  %s\nagent    %s\nstatus   %s\nupdated  %s\nturns    %d\n",
		s.ID, s.Agent, statusText(s), s.Updated.UTC().Format(time.RFC3339), s.Turns)
	showOperations(w, s)
	if s.Inbox > 0 {
		fmt.Fprintf(w, "inbox    %d message(s) waiting\n", s.Inbox)
	}
	if s.LastFailure != nil {
		fmt.Fprintf(w, "failed   %s: %s\n", s.LastFailure.Kind, s.LastFailure.Error)
	}
	if t := s.Turn; t != nil {
		fmt.Fprintf(w, "turn     %s (started %s, %d invocation(s))\n", t.ID, t.Started.UTC().Format(time.RFC3339), t.Invocations)
		showTurnOperations(w, s, t)
		if v := t.Version; v.Fingerprint != "" {
			line := fmt.Sprintf("version  agent %s, build %s", v.Fingerprint, v.Build)
			if t.Changed {
				line += fmt.Sprintf("; resumed on a changed agent: %s, build %s", t.Latest.Fingerprint, t.Latest.Build)
			} else if t.Latest.Build != v.Build && t.Latest.Build != "" {
				line += "; now on build " + t.Latest.Build
			}
			fmt.Fprintln(w, line+onChangeText(v.OnChange, t.Changed, v.Build, t.Latest.Build))
		}
	}
	for _, c := range s.Stale {
		fmt.Fprintf(w, "stale    call %s of %s (turn %s): %s\n", c.ToolCallID, c.Tool, c.Turn, staleText(c))
	}
	for _, p := range s.Pending {
		fmt.Fprintf(w, "approval %s: %s(%s)\n         baton approve %s %s   |   baton deny %s %s --reason ...\n",
			p.ApprovalID, p.Tool, clipText(string(p.Input), 200), s.ID, p.ApprovalID, s.ID, p.ApprovalID)
	}
	for _, p := range s.ChildPending {
		asker := p.Session
		if asker == "" {
			asker = p.Child
		}
		via := ""
		if asker != p.Child {
			via = " (through child " + p.Child + ")"
		}
		fmt.Fprintf(w, "approval %s of child session %s%s: %s\n         baton show %s   |   baton approve %s %s\n",
			p.ApprovalID, asker, via, p.Tool, asker, asker, p.ApprovalID)
	}
	if s.Parent != nil {
		fmt.Fprintf(w, "parent   %s (turn %s, tool call %s)\n", s.Parent.Session, s.Parent.Turn, s.Parent.ToolCallID)
	}
	showCallbacks(w, s)
	if u := s.Uncertain; u != nil {
		fmt.Fprintf(w, "uncertain execution %s of %s, attempt %d (may or may not have run)\n         baton verdict %s %s rerun|abandon\n",
			u.ExecutionID, u.Tool, max(u.Attempt, 1), s.ID, u.ExecutionID)
	}
	claimscli.Show(w, s)
}

func (e *env) newSession(ctx context.Context, args []string) error {
	c := e.flags("new", true)
	pos, err := c.parse(args, 1, false, "AGENT")
	if err != nil {
		return err
	}
	cl, err := e.client(c)
	if err != nil {
		return err
	}
	s, err := cl.CreateSession(ctx, pos[0])
	if err != nil {
		return err
	}
	if c.json {
		return e.printJSON(s)
	}
	fmt.Fprintln(e.stdout, s.ID)
	return nil
}

func (e *env) send(ctx context.Context, args []string) error {
	c := e.flags("send", true)
	var paths fileFlags
	c.fs.Var(&paths, "file", "attach the file at PATH (repeatable): an image or a PDF, as the agent accepts")
	pos, err := c.parse(args, 1, true, "SESSION [TEXT...]")
	if err != nil {
		return err
	}
	text := strings.Join(pos[1:], " ")
	if text == "-" {
		b, err := io.ReadAll(io.LimitReader(e.stdin, reducer.MaxText+1))
		if err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
		text = string(b)
	}
	if len(paths) == 0 || text != "" {
		if err := reducer.CheckText("TEXT", text); err != nil {
			return usagef("%v", err)
		}
	}
	cl, err := e.client(c)
	if err != nil {
		return err
	}
	in := api.MessageRequest{Text: text}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return usagef("--file: %v", err)
		}
		part, err := cl.Attach(ctx, pos[0], filepath.Base(p), mediaTypeOf(p, data), data)
		if err != nil {
			return err
		}
		in.Files = append(in.Files, part)
	}
	out, err := cl.SendMessage(ctx, pos[0], in)
	if err != nil {
		return err
	}
	if c.json {
		return e.printJSON(out)
	}
	fmt.Fprintln(e.stdout, out.MessageID)
	return nil
}

func (e *env) answer(ctx context.Context, decision string, args []string) error {
	c := e.flags(decision, false)
	var reason, input string
	c.fs.StringVar(&reason, "reason", "", "why, recorded with the answer")
	if decision == "approve" {
		c.fs.StringVar(&input, "input", "", "approve with this input (a JSON object; - reads stdin)")
	}
	n, usage := 2, "SESSION APPROVAL"
	if decision == "respond" {
		n, usage = 3, "SESSION APPROVAL JSON"
	}
	pos, err := c.parse(args, n, false, usage)
	if err != nil {
		return err
	}
	var payload json.RawMessage
	switch {
	case decision == "respond":
		payload, err = e.jsonArg(pos[2], "JSON")
	case input != "":
		decision = "edit"
		payload, err = e.jsonArg(input, "--input")
	}
	if err != nil {
		return err
	}
	cl, err := e.client(c)
	if err != nil {
		return err
	}
	switch decision {
	case "edit":
		err = cl.Edit(ctx, pos[0], pos[1], payload, reason)
	case "respond":
		err = cl.Respond(ctx, pos[0], pos[1], payload, reason)
	default:
		err = cl.Answer(ctx, pos[0], pos[1], reducer.Decision(decision), reason)
	}
	if err != nil {
		return err
	}
	past := map[string]string{"approve": "approved", "deny": "denied", "edit": "approved with edits", "respond": "answered by hand"}[decision]
	fmt.Fprintf(e.stdout, "%s %s of session %s\n", past, pos[1], pos[0])
	return nil
}

// jsonArg is the JSON value arg names, read from stdin when arg is "-".
func (e *env) jsonArg(arg, name string) (json.RawMessage, error) {
	b := []byte(arg)
	if arg == "-" {
		var err error
		if b, err = io.ReadAll(io.LimitReader(e.stdin, reducer.MaxText+1)); err != nil {
			return nil, fmt.Errorf("read stdin: %w", err)
		}
	}
	if !json.Valid(b) {
		return nil, usagef("%s is not JSON", name)
	}
	return json.RawMessage(b), nil
}

func (e *env) verdict(ctx context.Context, args []string) error {
	c := e.flags("verdict", false)
	pos, err := c.parse(args, 3, false, "SESSION EXECUTION rerun|abandon")
	if err != nil {
		return err
	}
	v := pos[2]
	if v != string(reducer.Rerun) && v != string(reducer.Abandon) {
		return usagef("the verdict must be %s or %s, not %q", reducer.Rerun, reducer.Abandon, v)
	}
	cl, err := e.client(c)
	if err != nil {
		return err
	}
	if err := cl.Settle(ctx, pos[0], pos[1], reducer.Verdict(v)); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s %s of session %s\n", map[string]string{"rerun": "rerunning", "abandon": "abandoned"}[v], pos[1], pos[0])
	return nil
}

func (e *env) cancel(ctx context.Context, args []string) error {
	c := e.flags("cancel", false)
	var reason string
	c.fs.StringVar(&reason, "reason", "", "why, recorded with the cancellation")
	pos, err := c.parse(args, 1, false, "SESSION")
	if err != nil {
		return err
	}
	cl, err := e.client(c)
	if err != nil {
		return err
	}
	if err := cl.Cancel(ctx, pos[0], reason); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "cancelled the open turn of session %s\n", pos[0])
	return nil
}

// isTerminal reports whether w is a character device such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// fileFlags are the paths of repeated --file flags.
type fileFlags []string

func (f *fileFlags) String() string { return strings.Join(*f, ",") }

func (f *fileFlags) Set(p string) error {
	*f = append(*f, p)
	return nil
}

// mediaTypeOf is the media type of the file at path p holding data: by its
// extension, else by its bytes. The server checks it against the bytes.
func mediaTypeOf(p string, data []byte) string {
	if mt, _, err := mime.ParseMediaType(mime.TypeByExtension(filepath.Ext(p))); err == nil && mt != "" {
		return mt
	}
	mt, _, _ := mime.ParseMediaType(http.DetectContentType(data))
	return mt
}
