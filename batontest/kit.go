package batontest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/mcp/mcpsdk"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/providers/awslambda"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/internal/files"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/internal/tick"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// TB is the part of testing.TB the kit uses: a *testing.T or *testing.B
// will do. Every kit method fails the test through Fatalf on an error.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Outcome is how a Run ended: the outcome of the session's last invocation
// (turn.Outcome: the turn, how it ended, why it suspended, its steps), and,
// when the Run ran no invocation of the session, why not (Idle).
type Outcome struct {
	turn.Outcome
	// Idle is empty when the Run ran the session's turn. Otherwise it
	// says what the session waits for, such as "idle: no message waiting"
	// or "suspended: waiting for an operator's answer to 1 approval
	// request"; Kind is then empty.
	Idle string
}

// The types a test asserts on.
type (
	Fact      = reducer.Fact
	Part      = parts.Part
	Status    = reducer.Status
	Approval  = reducer.Approval
	Execution = reducer.Execution
	Verdict   = reducer.Verdict
)

// Errors an answer (Session.Edit, Session.Respond) fails with: an answer
// the reducer or the tool's schema refuses, and an approval that is not
// pending. Either writes nothing.
var (
	ErrBadAnswer  = reducer.ErrBadAnswer
	ErrNotPending = session.ErrNotPending
)

// Verdicts on an execution whose outcome is uncertain.
const (
	Rerun   = reducer.Rerun
	Abandon = reducer.Abandon
)

// Session statuses.
const (
	StatusIdle      = reducer.Idle
	StatusRunning   = reducer.Running
	StatusSuspended = reducer.Suspended
)

// Kind says how an invocation ended (Outcome.Kind).
type Kind = turn.Kind

// Kinds of Outcome.
const (
	Completed  = turn.Completed
	Suspended  = turn.Suspended
	Failed     = turn.Failed
	Superseded = turn.Superseded
)

// Options tune a Kit.
type Options struct {
	// Agents is an agent file whose agents run besides the Config's.
	Agents string
	// Log receives baton's logs; nil discards them.
	Log *slog.Logger
	// Timeout bounds each Run; zero means a minute.
	Timeout time.Duration
	// Template is the SAM template whose resources the kit creates, for a
	// project that keeps its own copy; nil means baton.Template().
	Template []byte
}

// Kit is one baton for a test, on resources of its own.
type Kit struct {
	// App is the baton under test: its handlers and its Operator API are
	// there for what the kit does not cover.
	App *host.App
	// Resources and AWS are what App was built on: a second App on them
	// (host.NewOn) is another container of the same deployment, and AWS
	// reaches the kit's emulator with the AWS SDK.
	Resources host.Resources
	AWS       aws.Config
	tb        TB
	timeout   time.Duration
	// engine is App's engine, which the kit drives.
	engine *app.App

	mu   sync.Mutex
	skew time.Duration
}

// Now is the kit's clock: the time now, plus what Skip skipped. The
// session store and the tick read it.
func (k *Kit) Now() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return time.Now().Add(k.skew)
}

// Skip moves the kit's clock d ahead, as if that time had passed: leases
// run out, approvals expire (see Tick), delayed wakes come due.
func (k *Kit) Skip(d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.skew += d
}

// Tick runs the tick function once, on the kit's clock: it reaps turns
// whose invocation died, denies expired approvals and re-sends lost wakes.
func (k *Kit) Tick() tick.Report {
	k.tb.Helper()
	ctx, cancel := k.ctx()
	defer cancel()
	rep, err := k.engine.Tick().Run(ctx)
	k.fatal(err)
	return rep
}

// New provisions fresh resources from baton.Template (names of their own,
// so kits may run side by side) on the emulator and builds c's App on them,
// as host.New does in a function. The emulator (kumo in-process, or the
// endpoint in AWS_ENDPOINT_URL) starts with the test binary's first kit and
// runs until the process exits.
func New(tb TB, c host.Config) *Kit { return NewWith(tb, c, Options{}) }

// NewWith is New with options.
func NewWith(tb TB, c host.Config, o Options) *Kit {
	tb.Helper()
	ctx := context.Background()
	tmpl := o.Template
	if tmpl == nil {
		tmpl = baton.Template()
	}
	if c.MCP == nil {
		// A kit runs every function's part in one process; its turns
		// reach the agents' MCP servers with baton's client.
		mlog := o.Log
		if mlog == nil {
			mlog = slog.New(slog.DiscardHandler)
		}
		c.MCP = mcpsdk.Dialer{Log: mlog}
	}
	if c.Lambda == nil {
		// Nor does it leave the file's lambda tools without an invoker.
		c.Lambda = awslambda.Invoker()
	}
	res, err := testenv.Provision(ctx, testenv.Emulator(), tmpl)
	if err != nil {
		tb.Fatalf("batontest: %v", err)
	}
	rs := host.Resources{Table: res.Table, Bucket: res.Bucket, QueueURL: res.QueueURL, AgentFile: o.Agents}
	cfg := res.Clients().Config
	var engine *app.App
	a, err := host.NewOn(ctx, app.OnBuild(c, func(a *app.App) { engine = a }), rs, cfg, o.Log)
	if err != nil {
		tb.Fatalf("batontest: %v", err)
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Minute
	}
	k := &Kit{App: a, Resources: rs, AWS: cfg, tb: tb, timeout: o.Timeout, engine: engine}
	engine.Sessions.Now = k.Now
	return k
}

func (k *Kit) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), k.timeout)
}

func (k *Kit) fatal(err error) {
	k.tb.Helper()
	if err != nil {
		k.tb.Fatalf("batontest: %v", err)
	}
}

// Owner is the operator who creates the kit's sessions and posts to them.
const Owner = "tester"

// Session is one session of the agent under test.
type Session struct {
	ID  string
	kit *Kit
}

// Session creates a session of the named agent, owned by Owner.
func (k *Kit) Session(agent string) *Session {
	k.tb.Helper()
	ctx, cancel := k.ctx()
	defer cancel()
	id := ids.New("s")
	_, err := k.engine.Sessions.Create(ctx, id, Owner, agent)
	k.fatal(err)
	return &Session{ID: id, kit: k}
}

// operatorActor is the operator id, as the kit answers and posts.
func operatorActor(id string) reducer.Actor {
	return reducer.Actor{Kind: reducer.ActorOperator, ID: id}
}

// Post posts a message as Owner; the next Run starts its turn.
func (s *Session) Post(text string) {
	s.kit.tb.Helper()
	ctx, cancel := s.kit.ctx()
	defer cancel()
	_, err := s.kit.engine.Sessions.Post(ctx, s.ID, operatorActor(Owner), text)
	s.kit.fatal(err)
}

// File is a file a message carries: its media type ("image/png"), name
// and bytes.
type File struct {
	MediaType, Name string
	Data            []byte
}

// PostFiles posts a message with files as Owner, checked and stored as
// the API does (the agent's Files policy, the bytes sniffed, S3 once per
// digest); a refusal fails the test (TryPostFiles returns it). text may
// be empty.
func (s *Session) PostFiles(text string, fs ...File) {
	s.kit.tb.Helper()
	s.kit.fatal(s.TryPostFiles(text, fs...))
}

// TryPostFiles is PostFiles returning the refusal (an error that names
// the file and why: a type the agent does not take, too big, too many, a
// file its bytes belie), when nothing is written.
func (s *Session) TryPostFiles(text string, fs ...File) error {
	ctx, cancel := s.kit.ctx()
	defer cancel()
	st, err := s.kit.engine.Sessions.Load(ctx, s.ID)
	if err != nil {
		return err
	}
	in := make([]files.Input, len(fs))
	for i, f := range fs {
		in[i] = files.Input{MediaType: f.MediaType, Name: f.Name, URL: "data:" + f.MediaType + ";base64," + base64.StdEncoding.EncodeToString(f.Data)}
	}
	ss := s.kit.engine.Sessions
	refs, _, err := ss.Files.Ingest(ctx, s.ID, ss.FilePolicy(st.State.Agent), in)
	if err != nil {
		return err
	}
	_, err = ss.PostMessage(ctx, s.ID, operatorActor(Owner), reducer.Message{Text: text, Files: refs})
	return err
}

// Run is one fresh invocation of the resume function for the session, and
// then its children's, as the deployed wakes would run them: the worker
// the function runs handles a wake for the session, starting, resuming or
// leaving its turn as its facts say; then each child session its turns
// started (by a sub-agent call or a fan-out) runs the same way, with its
// own children, and reports its end to the session, whose turn resumes.
// Run stops when no session of the family has anything left to do: the
// session's turn has ended, or waits for what only the test can give (an
// approval, a verdict, the kit's clock past a delay), for itself or for a
// child. It returns the session's last outcome. A Run that ran no
// invocation of the session returns an Outcome whose Idle says why.
//
// A test that steps a session and its children by hand, to see each in
// between, calls RunAlone instead.
//
// Each invocation has the kit's Timeout as its Lambda deadline. One that is
// suspended for its budget only because it ran into that deadline (a tool
// or model that never returned) fails the test and says so: a test hook
// that blocks must return when its context is done, and must not block
// again on the resume that follows (a kill, RunKilled, cancels the model's
// and the tools' context; the next Run calls them afresh).
func (s *Session) Run() Outcome {
	s.kit.tb.Helper()
	out, _ := runFamily(s)
	return explained(s, out)
}

// RunAlone is one fresh invocation of the resume function for the session
// alone, as Run without the children: a child session its turn starts is
// left to wait, with its task, for the test's Run or RunAlone of it
// (Children), and so is a child's report to its parent. It returns the
// session's outcome, or, when there was nothing to do, an Outcome whose
// Idle says why.
func (s *Session) RunAlone() Outcome {
	s.kit.tb.Helper()
	out, _ := runOnce(s)
	return explained(s, out)
}

// maxRounds bounds the rounds of one Run over a session and its children.
const maxRounds = 100

// runFamily runs session s once, then its children, each with its own,
// and the session again while a child did something. did reports whether
// any session of the family changed.
func runFamily(s *Session) (last Outcome, did bool) {
	s.kit.tb.Helper()
	for range maxRounds {
		out, ran := runOnce(s)
		if out.Kind != "" {
			last = out
		}
		did = did || ran
		kids := false
		for _, c := range s.Children() {
			if _, ran := runFamily(c); ran {
				kids = true
			}
		}
		if !kids {
			return last, did
		}
		did = true
	}
	s.kit.tb.Fatalf("batontest: session %s and its children still had work after %d rounds of one Run", s.ID, maxRounds)
	return last, did
}

// runOnce is one invocation for session s; ran reports whether it changed
// the session (ran a turn, or reported its end to its parent).
func runOnce(s *Session) (Outcome, bool) {
	s.kit.tb.Helper()
	before := lastSeqOf(s)
	ctx, cancel := s.kit.ctx()
	defer cancel()
	out, err := runTurn(ctx, s)
	s.kit.fatal(err)
	if hitDeadline(ctx, out, s.kit.timeout) {
		s.kit.tb.Fatalf("batontest: the invocation ran into its %v deadline while a tool or the model was still blocked, "+
			"and the turn was suspended for its budget (turn %s): a blocking tool or test hook must return when its context is done, "+
			"and not block again on resume", s.kit.timeout, out.Turn)
	}
	return Outcome{Outcome: out}, out.Kind != "" || lastSeqOf(s) != before
}

// lastSeqOf is the sequence number of session s's last fact; -1 once the
// session is deleted (a Run of it then does nothing).
func lastSeqOf(s *Session) int64 {
	s.kit.tb.Helper()
	ctx, cancel := s.kit.ctx()
	defer cancel()
	sess, err := s.kit.engine.Sessions.Load(ctx, s.ID)
	if errors.Is(err, session.ErrNotFound) {
		return -1
	}
	s.kit.fatal(err)
	return sess.State.LastSeq
}

// explained sets an outcome that ran nothing's Idle.
func explained(s *Session, out Outcome) Outcome {
	if out.Kind == "" {
		out.Idle = s.Waiting()
	}
	return out
}

// Waiting says what the session waits for now, as a Run that ran nothing
// reports it (Outcome.Idle): "idle: no message waiting", "suspended:
// waiting for its children", "deleted", and so on.
func (s *Session) Waiting() string {
	s.kit.tb.Helper()
	ctx, cancel := s.kit.ctx()
	defer cancel()
	sess, err := s.kit.engine.Sessions.Load(ctx, s.ID)
	if errors.Is(err, session.ErrNotFound) {
		return "deleted: the session no longer exists"
	}
	s.kit.fatal(err)
	st := sess.State
	n := st.Next(s.kit.Now(), 0)
	t := st.Turn
	switch {
	case n.Reason == reducer.NoReason && st.Status == reducer.Idle:
		return "idle: no message waiting"
	case n.Reason == reducer.ReasonInbox:
		return fmt.Sprintf("not started: %d message(s) waiting for a turn, which the next Run starts", len(st.Inbox))
	case n.Reason == reducer.ReasonLease:
		return fmt.Sprintf("running: an invocation holds the turn's lease until %s (one that died is taken over once the kit's clock passes it: Skip)",
			n.Due.Format(time.RFC3339Nano))
	case n.Reason == reducer.ReasonApproval || (n.Reason == reducer.ReasonOperator && t != nil && len(t.Pending) > 0):
		return fmt.Sprintf("suspended: waiting for an operator's answer to %d approval request(s)", len(t.Pending))
	case n.Reason == reducer.ReasonOperator && t != nil && t.Uncertain != nil:
		return fmt.Sprintf("suspended: waiting for an operator's verdict on execution %s", t.Uncertain.ID)
	case n.Reason == reducer.ReasonOperator && t != nil && t.Cause == reducer.CauseLimit:
		return "suspended: at a spend limit, waiting for an operator to raise it"
	case n.Reason == reducer.ReasonChildren:
		return "suspended: waiting for its children, which wait for the test (see their Waiting)"
	case n.Reason == reducer.ReasonTimer || n.Reason == reducer.ReasonFault:
		return fmt.Sprintf("suspended (%s): its delayed wake is due at %s (Skip the kit's clock)", t.Cause, n.Due.Format(time.RFC3339Nano))
	case n.Reason == reducer.ReasonCallback:
		k, _ := t.Awaiting()
		return fmt.Sprintf("suspended: waiting for %d callback(s) to be completed (Kit.Complete), or to time out at %s (Skip the kit's clock)", k, n.Due.Format(time.RFC3339Nano))
	case n.Reason == reducer.ReasonSchedule:
		return fmt.Sprintf("idle: no message waiting; its schedule's next message is due at %s", n.Due.Format(time.RFC3339Nano))
	}
	return fmt.Sprintf("%s: waiting (%s)", st.Status, n.Reason)
}

// hitDeadline reports whether out is a budget suspension of a run that
// used up most of its time: the deadline ended it, not a step limit.
func hitDeadline(ctx context.Context, out turn.Outcome, timeout time.Duration) bool {
	dl, ok := ctx.Deadline()
	return ok && out.Kind == turn.Suspended && out.Cause == reducer.CauseBudget && time.Until(dl) < timeout/4
}

// runTurn hands session s a wake, as the resume worker gets one.
func runTurn(ctx context.Context, s *Session) (turn.Outcome, error) {
	res, err := s.kit.engine.Worker().Handle(ctx, wake.Wake{Session: s.ID, Reason: "batontest"})
	if err != nil || len(res.Outcomes) == 0 {
		return turn.Outcome{}, err
	}
	return res.Outcomes[len(res.Outcomes)-1], nil
}

// RunKilled is an invocation that dies when kill is closed (or receives),
// as a Lambda whose process is killed mid-turn: what it wrote durably
// stays, the rest is lost. It then skips the kit's clock past the dead
// invocation's lease, so that the next Run takes the turn over as the
// resume function would once the lease ran out. A run that ends before
// kill leaves things as Run does.
func (s *Session) RunKilled(kill <-chan struct{}) {
	s.kit.tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-kill:
			cancel()
		case <-ctx.Done():
		}
	}()
	_, err := runTurn(ctx, s)
	if err != nil && !errors.Is(err, context.Canceled) {
		s.kit.fatal(err)
	}
	awaitLease(s)
}

// RunFor is RunKilled with the kill d after the start.
func (s *Session) RunFor(d time.Duration) {
	s.kit.tb.Helper()
	kill := make(chan struct{})
	t := time.AfterFunc(d, func() { close(kill) })
	defer t.Stop()
	s.RunKilled(kill)
}

// awaitLease waits until a killed invocation's lease on session s has
// passed, on the kit's clock.
func awaitLease(s *Session) {
	s.kit.tb.Helper()
	st := s.State()
	if st.Status == reducer.Running && st.Turn != nil {
		if d := st.Turn.Lease.Sub(s.kit.Now()); d >= 0 {
			s.kit.Skip(d + time.Millisecond)
		}
	}
}

// State is the session's reduced state: status, open turn, inbox.
func (s *Session) State() reducer.State {
	s.kit.tb.Helper()
	ctx, cancel := s.kit.ctx()
	defer cancel()
	sess, err := s.kit.engine.Sessions.Load(ctx, s.ID)
	s.kit.fatal(err)
	return sess.State
}

// Status is the session's status as the reducer has it: a session with
// messages waiting and no turn yet (a child before its first Run, under
// RunAlone) is StatusIdle until a Run starts its turn; Waiting says more.
func (s *Session) Status() Status { return s.State().Status }

// Pending lists the approvals the open turn waits for.
func (s *Session) Pending() []Approval {
	s.kit.tb.Helper()
	if t := s.State().Turn; t != nil {
		return t.Pending
	}
	return nil
}

// Uncertain is the side effect whose outcome the open turn cannot know
// (its invocation died while it ran), awaiting a Verdict; nil if none.
func (s *Session) Uncertain() *Execution {
	s.kit.tb.Helper()
	if t := s.State().Turn; t != nil {
		return t.Uncertain
	}
	return nil
}

// Approve approves a pending call as the operator "approver"; the next
// Run runs it.
func (s *Session) Approve(approvalID string) { answerAs(s, approvalID, reducer.Approve, "") }

// ApproveBecause approves a pending call as Approve does, giving a reason;
// the tool sees both approver and reason (baton.CallOf).
func (s *Session) ApproveBecause(approvalID, reason string) {
	answerAs(s, approvalID, reducer.Approve, reason)
}

// Deny denies a pending call; the model is told, with reason.
func (s *Session) Deny(approvalID, reason string) { answerAs(s, approvalID, reducer.Deny, reason) }

// answerAs answers approval id of session s as the operator "approver";
// the test fails on an error.
func answerAs(s *Session, id string, d reducer.Decision, reason string) {
	s.kit.tb.Helper()
	s.kit.fatal(replyAs(s, reducer.Answer{ApprovalID: id, Decision: d, Reason: reason}))
}

// Edit approves a pending call as the operator "approver" with new input
// (a value that encodes to a JSON object), which the tool's schema and
// approval rules check again; the next Run runs the tool with it. An
// input the schema refuses fails with an error wrapping ErrBadAnswer and
// changes nothing; a call that is not pending fails with ErrNotPending.
func (s *Session) Edit(approvalID string, input any) error {
	b, err := json.Marshal(input)
	if err != nil {
		return fmt.Errorf("batontest: edit %s: %w", approvalID, err)
	}
	return replyAs(s, reducer.Answer{ApprovalID: approvalID, Decision: reducer.Edit, Input: b})
}

// Respond answers a pending call as the operator "approver" with output
// as its result: the tool never runs, and the model gets output (any
// value JSON encodes) as the call's result.
func (s *Session) Respond(approvalID string, output any) error {
	b, err := json.Marshal(output)
	if err != nil {
		return fmt.Errorf("batontest: respond %s: %w", approvalID, err)
	}
	return replyAs(s, reducer.Answer{ApprovalID: approvalID, Decision: reducer.Respond, Output: b})
}

// replyAs records an answer as the operator "approver".
func replyAs(s *Session, a reducer.Answer) error {
	ctx, cancel := s.kit.ctx()
	defer cancel()
	return s.kit.engine.Sessions.Answer(ctx, s.ID, operatorActor("approver"), a)
}

// Verdict settles an uncertain execution: Rerun runs the tool once more,
// as a new execution (if that run dies too, it is uncertain in turn, under
// its own id); Abandon tells the model it may not have happened.
func (s *Session) Verdict(executionID string, v Verdict) {
	s.kit.tb.Helper()
	ctx, cancel := s.kit.ctx()
	defer cancel()
	s.kit.fatal(s.kit.engine.Sessions.Settle(ctx, s.ID, operatorActor("approver"), executionID, v))
}

// Facts are the session's facts, in order.
func (s *Session) Facts() []Fact {
	s.kit.tb.Helper()
	ctx, cancel := s.kit.ctx()
	defer cancel()
	fs, err := s.kit.engine.Sessions.Facts(ctx, s.ID, 0)
	s.kit.fatal(err)
	return fs
}

// Executions lists the tools of the side effects the ledger recorded
// before they ran, in order: a call rerun on a verdict is listed again.
func (s *Session) Executions() []string {
	s.kit.tb.Helper()
	var out []string
	for _, f := range s.Facts() {
		if f.Type == reducer.ExecutionStarted && f.Execution != nil {
			out = append(out, f.Execution.Tool)
		}
	}
	return out
}

// Parts are the stream parts of every turn of the session, in order.
func (s *Session) Parts() []Part {
	s.kit.tb.Helper()
	ctx, cancel := s.kit.ctx()
	defer cancel()
	var out []Part
	for _, f := range s.Facts() {
		stream := f.Stream
		if f.Type == reducer.SessionRewound && f.Rewind != nil && f.Rewind.Turn != nil {
			stream = f.Rewind.Turn.Stream // a turn reopened at a step (rewind.go)
		} else if f.Type != reducer.TurnStarted {
			continue
		}
		if stream == "" {
			continue
		}
		page, err := s.kit.engine.Sessions.ReadStream(ctx, s.ID, stream, "")
		s.kit.fatal(err)
		for _, e := range page.Entries {
			out = append(out, e.Part)
		}
	}
	return out
}

// Text is the text the model streamed in every turn, joined.
func (s *Session) Text() string {
	s.kit.tb.Helper()
	var b strings.Builder
	for _, p := range s.Parts() {
		if p.Type == parts.TextDelta {
			b.WriteString(p.Delta)
		}
	}
	return b.String()
}

// ToolCall is one call the model made and what became of it, as the
// stream tells it.
type ToolCall struct {
	ID, Tool string
	// Input is what the call ran with: the model's input, or an edit's.
	// Original is the model's input when an answer edited it.
	Input, Original json.RawMessage
	// Output is the result of a call that ran; Error the error result the
	// model saw (invalid input, a failed run); Denied that an operator
	// said no. A call still waiting has none of them.
	Output json.RawMessage
	Error  string
	Denied bool
}

// ToolCalls lists the session's tool calls, in the order the model made
// them.
func (s *Session) ToolCalls() []ToolCall {
	s.kit.tb.Helper()
	var out []ToolCall
	at := map[string]int{}
	for _, p := range s.Parts() {
		switch p.Type {
		case parts.ToolInputAvailable:
			if _, ok := at[p.ToolCallID]; !ok {
				at[p.ToolCallID] = len(out)
				out = append(out, ToolCall{ID: p.ToolCallID, Tool: p.ToolName, Input: p.Input})
			}
		case parts.DataEdited:
			var e struct {
				ToolCallID string          `json:"toolCallId"`
				Input      json.RawMessage `json:"input"`
			}
			if json.Unmarshal(p.Data, &e) != nil {
				continue
			}
			if i, ok := at[e.ToolCallID]; ok {
				out[i].Original, out[i].Input = out[i].Input, e.Input
			}
		case parts.ToolOutputAvailable, parts.ToolOutputError, parts.ToolOutputDenied:
			i, ok := at[p.ToolCallID]
			if !ok {
				continue
			}
			c := &out[i]
			switch p.Type {
			case parts.ToolOutputAvailable:
				c.Output = p.Output
			case parts.ToolOutputError:
				c.Error = p.ErrorText
			default:
				c.Denied = true
			}
		}
	}
	return out
}

// Call returns the first call of the named tool; the test fails if the
// model made none.
func (s *Session) Call(tool string) ToolCall {
	s.kit.tb.Helper()
	for _, c := range s.ToolCalls() {
		if c.Tool == tool {
			return c
		}
	}
	s.kit.tb.Fatalf("batontest: session %s: no call of %s", s.ID, tool)
	return ToolCall{}
}

// String describes a call for failure messages.
func (c ToolCall) String() string {
	return fmt.Sprintf("%s(%s) -> output=%s error=%q denied=%v", c.Tool, c.Input, c.Output, c.Error, c.Denied)
}
