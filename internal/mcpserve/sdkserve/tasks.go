package sdkserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/baton-run/baton/internal/callback"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// taskExtension is the tasks extension's name, in capabilities.
const taskExtension = "io.modelcontextprotocol/tasks"

// relatedTask is the _meta key that ties a message to its task.
const relatedTask = "io.modelcontextprotocol/related-task"

// pollInterval is how often the handler looks at a session it waits on,
// and the poll interval it suggests to clients, in milliseconds.
const (
	pollInterval   = 250 * time.Millisecond
	pollIntervalMs = 1000
)

// Task statuses.
const (
	working       = "working"
	inputRequired = "input_required"
	completed     = "completed"
	failed        = "failed"
	cancelled     = "cancelled"
)

// callParams are a tools/call's params.
type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Task asks for a task (2025-11-25); its ttl is not kept: a task
	// lives as long as its session.
	Task *struct {
		TTL *int64 `json:"ttl,omitempty"`
	} `json:"task,omitempty"`
	Meta map[string]json.RawMessage `json:"_meta,omitempty"`
}

// asTask reports whether the call asks for a task: a task param, or the
// tasks extension among the request's client capabilities.
func (p callParams) asTask() bool {
	if p.Task != nil {
		return true
	}
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	raw, ok := p.Meta["io.modelcontextprotocol/clientCapabilities"]
	if !ok || json.Unmarshal(raw, &caps) != nil {
		return false
	}
	_, ok = caps.Extensions[taskExtension]
	return ok
}

// input is an agent tool's arguments.
type input struct {
	Message string `json:"message"`
	Session string `json:"session,omitempty"`
}

func decodeInput(raw json.RawMessage) (input, error) {
	var in input
	if len(raw) == 0 || string(raw) == "null" {
		return in, errors.New("arguments are required: {\"message\": \"...\"}")
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, fmt.Errorf("arguments: %w (want {\"message\": \"...\", \"session\": \"...\"})", err)
	}
	if err := reducer.CheckText("message", in.Message); err != nil {
		return in, fmt.Errorf("arguments: %w", err)
	}
	return in, nil
}

// ref names a task: the session and the message whose turn it is. A
// task's id is "SESSION.MESSAGE".
type ref struct{ session, message string }

func (r ref) id() string { return r.session + "." + r.message }

func parseRef(id string) (ref, bool) {
	s, m, ok := strings.Cut(id, ".")
	return ref{s, m}, ok && s != "" && m != "" && !strings.Contains(m, ".")
}

// errUnknownTask answers a task id that is not the caller's (or not
// anyone's): the same words either way.
func errUnknownTask(id string) *rpcError { return invalid("unknown task %q", clip(id)) }

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// start posts the call's message to agent in a new session of the
// caller's, or in in.Session when it is the caller's, of that agent, and
// idle. Bad input writes nothing.
func (h *handler) start(ctx context.Context, caller, agent string, in input) (ref, error) {
	if !slices.Contains(h.c.Agents, agent) {
		return ref{}, invalid("unknown tool %q", clip(agent))
	}
	id := in.Session
	if id != "" {
		sess, err := h.c.Sessions.Load(ctx, id)
		switch {
		case errors.Is(err, session.ErrNotFound):
			return ref{}, invalid("unknown session %q", clip(id))
		case err != nil:
			return ref{}, fmt.Errorf("mcpserve: load session %s: %w", id, err)
		}
		st := sess.State
		switch {
		case st.Owner != caller:
			return ref{}, invalid("unknown session %q", clip(id))
		case st.Agent != agent:
			return ref{}, invalid("session %q runs agent %q, not %q", clip(id), st.Agent, agent)
		case st.Turn != nil:
			return ref{}, invalid("session %q has an open turn (%s); wait for it or cancel its task first", clip(id), st.Status)
		}
	} else {
		id = ids.New("s")
		if _, err := h.c.Sessions.Create(ctx, id, caller, agent); err != nil {
			return ref{}, fmt.Errorf("mcpserve: create a session of %s: %w", agent, err)
		}
	}
	msg, err := h.c.Sessions.Post(ctx, id, reducer.Actor{Kind: reducer.ActorOperator, ID: caller}, in.Message)
	if err != nil {
		return ref{}, fmt.Errorf("mcpserve: post to %s: %w", id, err)
	}
	return ref{id, msg}, nil
}

// wait is one thing a task's turn waits for that the caller can give.
type wait struct {
	Key        string          `json:"key"`
	Kind       string          `json:"kind"` // approval, callback or execution
	Tool       string          `json:"tool,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
}

// view is a task as the facts tell it.
type view struct {
	ref              ref
	created, updated time.Time
	status, message  string
	turn, stream     string
	end              *reducer.Fact
	waits            []wait
}

func (v *view) terminal() bool {
	return v.status == completed || v.status == failed || v.status == cancelled
}

// resolve reads task id of caller; another caller's, or an unknown, id
// is errUnknownTask.
func (h *handler) resolve(ctx context.Context, caller, id string) (*view, error) {
	r, ok := parseRef(id)
	if !ok {
		return nil, errUnknownTask(id)
	}
	sess, err := h.c.Sessions.Load(ctx, r.session)
	if errors.Is(err, session.ErrNotFound) {
		return nil, errUnknownTask(id)
	}
	if err != nil {
		return nil, fmt.Errorf("mcpserve: load task %s: %w", id, err)
	}
	st := sess.State
	if st.Owner != caller || !slices.Contains(h.c.Agents, st.Agent) {
		// Another caller's session, or one of an agent not served here
		// (the caller's chats): no task of this endpoint.
		return nil, errUnknownTask(id)
	}
	facts, err := h.c.Sessions.Facts(ctx, r.session, 0)
	if err != nil {
		return nil, fmt.Errorf("mcpserve: read task %s: %w", id, err)
	}
	v := &view{ref: r}
	found := false
	for i, f := range facts {
		switch {
		case !found:
			if f.Type == reducer.MessageReceived && f.Message != nil && f.Message.ID == r.message {
				found, v.created, v.updated = true, f.Time, f.Time
			}
		case v.turn == "":
			if f.Type == reducer.TurnStarted {
				v.turn, v.stream, v.updated = f.Turn, f.Stream, f.Time
			}
		case v.end == nil && f.Turn == v.turn:
			v.updated = f.Time
			if f.Ends() {
				v.end = &facts[i]
			}
		}
	}
	if !found {
		return nil, errUnknownTask(id)
	}
	switch {
	case v.end != nil:
		v.status, v.message = ending(*v.end)
	case v.turn == "":
		v.status, v.message = working, "the message waits for its turn to start"
	case st.Turn != nil && st.Turn.ID == v.turn && st.Status == reducer.Suspended:
		v.waits = waitsOf(st)
		if len(v.waits) > 0 {
			v.status, v.message = inputRequired, describe(v.waits)
		} else {
			v.status, v.message = working, fmt.Sprintf("the turn is suspended (%s) and resumes by itself", st.Turn.Cause)
		}
	default:
		v.status, v.message = working, "the turn is running"
	}
	return v, nil
}

// ending maps a turn's ending fact to a task status.
func ending(f reducer.Fact) (string, string) {
	switch f.Type {
	case reducer.TurnCompleted:
		return completed, "the turn completed"
	case reducer.TurnCancelled:
		return cancelled, "the turn was cancelled"
	case reducer.TurnInterrupted:
		return completed, "the turn was interrupted by a later message"
	}
	if f.Failure != nil {
		return failed, fmt.Sprintf("the turn failed (%s): %s", f.Failure.Kind, f.Failure.Error)
	}
	return failed, "the turn failed"
}

// waitsOf lists what the open, suspended turn of st waits for from a
// person: approvals (its own and its children's), an uncertain
// execution's verdict, callbacks.
func waitsOf(st reducer.State) []wait {
	t := st.Turn
	var out []wait
	for _, p := range t.Pending {
		out = append(out, wait{Key: p.ID, Kind: "approval", Tool: p.Tool, ToolCallID: p.ToolCallID, Input: p.Input})
	}
	for _, c := range t.Requests {
		p := c.Approval
		if !slices.ContainsFunc(out, func(w wait) bool { return w.Key == p.ID }) && !answered(t, p.ID) {
			out = append(out, wait{Key: p.ID, Kind: "approval", Tool: p.Tool, ToolCallID: p.ToolCallID, Input: p.Input})
		}
	}
	if e := t.Uncertain; e != nil {
		if _, settled := t.Verdict(e.ID); !settled {
			out = append(out, wait{Key: e.ID, Kind: "execution", Tool: e.Tool, ToolCallID: e.ToolCallID})
		}
	}
	for _, c := range t.Callbacks {
		if !c.Ended() && !slices.ContainsFunc(out, func(w wait) bool { return w.ToolCallID == c.ToolCallID && w.Kind == "callback" }) {
			out = append(out, wait{Key: "callback:" + c.ToolCallID, Kind: "callback", Tool: c.Tool, ToolCallID: c.ToolCallID})
		}
	}
	return out
}

func answered(t *reducer.Turn, approval string) bool {
	return slices.ContainsFunc(t.Answers, func(a reducer.Answer) bool { return a.ApprovalID == approval })
}

// describe says what a task waits for, in a sentence.
func describe(ws []wait) string {
	var b strings.Builder
	for i, w := range ws {
		if i > 0 {
			b.WriteString("; ")
		}
		switch w.Kind {
		case "approval":
			fmt.Fprintf(&b, "approval %s: tool %s with input %s", w.Key, w.Tool, w.Input)
		case "execution":
			fmt.Fprintf(&b, "a verdict on execution %s of tool %s, which may or may not have run (rerun or abandon)", w.Key, w.Tool)
		case "callback":
			fmt.Fprintf(&b, "the callback of tool %s (call %s)", w.Tool, w.ToolCallID)
		}
	}
	return "waiting for " + b.String()
}

// inputRequests are the task's waits as the tasks extension's
// inputRequests: one form elicitation each, keyed by what it answers.
func (v *view) inputRequests() map[string]any {
	out := map[string]any{}
	for _, w := range v.waits {
		var msg string
		var props map[string]any
		switch w.Kind {
		case "approval":
			msg = fmt.Sprintf("Approve tool %s with input %s?", w.Tool, w.Input)
			props = map[string]any{
				"decision": map[string]any{"type": "string", "enum": []string{"approve", "deny", "edit"}},
				"reason":   map[string]any{"type": "string", "description": "why (with deny)"},
				"input":    map[string]any{"type": "string", "description": "with edit: the input the call runs with instead, a JSON object"},
			}
		case "execution":
			msg = fmt.Sprintf("Execution %s of tool %s may or may not have run. Rerun or abandon it?", w.Key, w.Tool)
			props = map[string]any{"verdict": map[string]any{"type": "string", "enum": []string{"rerun", "abandon"}}}
		case "callback":
			msg = fmt.Sprintf("Tool %s waits for its callback. Complete it by hand?", w.Tool)
			props = map[string]any{
				"output": map[string]any{"type": "string", "description": "the call's result (JSON, or text)"},
				"error":  map[string]any{"type": "string", "description": "or the call's failure"},
			}
		}
		out[w.Key] = map[string]any{"method": "elicitation/create", "params": map[string]any{
			"mode": "form", "message": msg,
			"requestedSchema": map[string]any{"type": "object", "properties": props},
			"_meta":           map[string]any{relatedTask: map[string]string{"taskId": v.ref.id()}, "baton/wait": w},
		}}
	}
	return out
}

// task is v as the protocol's Task: 2025-11-25's fields and the tasks
// extension's (ttlMs, pollIntervalMs, inputRequests).
func (v *view) task() map[string]any {
	t := map[string]any{
		"taskId": v.ref.id(), "status": v.status, "statusMessage": v.message,
		"createdAt": v.created.UTC().Format(time.RFC3339Nano), "lastUpdatedAt": v.updated.UTC().Format(time.RFC3339Nano),
		"ttl": nil, "ttlMs": nil, "pollInterval": pollIntervalMs, "pollIntervalMs": pollIntervalMs,
		"_meta": map[string]any{"baton/session": v.ref.session, "baton/turn": v.turn},
	}
	if v.status == inputRequired {
		t["inputRequests"] = v.inputRequests()
	}
	return t
}

// tasks answers tasks/get, tasks/result, tasks/cancel, tasks/update and
// tasks/list.
func (h *handler) tasks(ctx context.Context, caller, method string, raw json.RawMessage) (any, *rpcError) {
	var p struct {
		TaskID         string                     `json:"taskId"`
		Cursor         string                     `json:"cursor,omitempty"`
		InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, invalid("%s params: %v", method, err)
		}
	}
	if method == "tasks/list" {
		return h.listTasks(ctx, caller, p.Cursor)
	}
	if p.TaskID == "" {
		return nil, invalid("%s: taskId is required", method)
	}
	var res any
	var err error
	switch method {
	case "tasks/get":
		var v *view
		if v, err = h.resolve(ctx, caller, p.TaskID); err == nil {
			t := v.task()
			if v.terminal() {
				if r, rerr := h.result(ctx, v); rerr == nil {
					t["result"] = r
				}
			}
			t["resultType"] = "complete"
			res = t
		}
	case "tasks/result":
		res, err = h.awaitResult(ctx, caller, p.TaskID)
	case "tasks/cancel":
		res, err = h.cancel(ctx, caller, p.TaskID)
	case "tasks/update":
		res, err = h.update(ctx, caller, p.TaskID, p.InputResponses)
	}
	if err != nil {
		return nil, rpcFrom(err)
	}
	return res, nil
}

// rpcFrom makes err a JSON-RPC error: its own when it is one, else an
// internal error.
func rpcFrom(err error) *rpcError {
	var re *rpcError
	if errors.As(err, &re) {
		return re
	}
	return &rpcError{Code: codeInternal, Message: err.Error()}
}

// createTask starts the call's turn and answers its task at once.
func (h *handler) createTask(ctx context.Context, caller string, p callParams) (any, *rpcError) {
	if !slices.Contains(h.c.Agents, p.Name) {
		return nil, invalid("unknown tool %q", clip(p.Name))
	}
	in, err := decodeInput(p.Arguments)
	if err != nil {
		return nil, invalid("%v", err)
	}
	r, err := h.start(ctx, caller, p.Name, in)
	if err != nil {
		return nil, rpcFrom(err)
	}
	v, err := h.resolve(ctx, caller, r.id())
	if err != nil {
		return nil, rpcFrom(err)
	}
	return map[string]any{"resultType": "task", "task": v.task(), "_meta": map[string]any{
		"io.modelcontextprotocol/model-immediate-response": fmt.Sprintf("Agent %s is working on it as task %s (session %s).", p.Name, r.id(), r.session),
	}}, nil
}

// awaitResult answers tasks/result: the call's result once the task ends,
// waiting for it up to the hold.
func (h *handler) awaitResult(ctx context.Context, caller, id string) (any, error) {
	deadline := time.Now().Add(h.hold)
	for {
		v, err := h.resolve(ctx, caller, id)
		if err != nil {
			return nil, err
		}
		if v.terminal() {
			return h.result(ctx, v)
		}
		if !sleep(ctx, deadline) {
			return nil, &rpcError{Code: -32000, Message: fmt.Sprintf("task %s is still %s (%s); call tasks/result again, or poll tasks/get", id, v.status, v.message),
				Data: map[string]any{"status": v.status}}
		}
	}
}

// sleep waits one poll interval, and reports false when that passes the
// deadline or ctx ends.
func sleep(ctx context.Context, deadline time.Time) bool {
	if time.Until(deadline) < pollInterval {
		return false
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(pollInterval):
		return true
	}
}

// result is an ended task's CallToolResult: the turn's final answer.
func (h *handler) result(ctx context.Context, v *view) (map[string]any, error) {
	text, err := h.answerText(ctx, v.ref.session, v.stream)
	if err != nil {
		return nil, err
	}
	structured := map[string]any{"session": v.ref.session, "turn": v.turn, "status": v.status, "answer": text}
	content := text
	isError := v.status != completed
	if isError {
		content = v.message
		if text != "" {
			content += "; its last text: " + text
		}
	}
	return map[string]any{
		"content": []map[string]any{{"type": "text", "text": content}}, "structuredContent": structured, "isError": isError,
		"_meta": map[string]any{relatedTask: map[string]string{"taskId": v.ref.id()}},
	}, nil
}

// answerText reads a turn's final answer: the text of its last step.
func (h *handler) answerText(ctx context.Context, id, stream string) (string, error) {
	if stream == "" {
		return "", nil
	}
	var b strings.Builder
	cursor := streams.Cursor("")
	for {
		page, err := h.c.Sessions.ReadStream(ctx, id, stream, cursor)
		if err != nil {
			return "", fmt.Errorf("mcpserve: read the stream of %s: %w", id, err)
		}
		for _, e := range page.Entries {
			switch e.Part.Type {
			case parts.StartStep:
				b.Reset()
			case parts.TextDelta:
				b.WriteString(e.Part.Delta)
			}
		}
		if !page.More || page.Cursor == cursor {
			return b.String(), nil
		}
		cursor = page.Cursor
	}
}

// cancel answers tasks/cancel: the turn ends cancelled before the answer.
// A task that already ended is refused (-32602), as the protocol says.
func (h *handler) cancel(ctx context.Context, caller, id string) (any, error) {
	deadline := time.Now().Add(h.hold)
	for {
		v, err := h.resolve(ctx, caller, id)
		if err != nil {
			return nil, err
		}
		if v.terminal() {
			return nil, invalid("task %s is already %s", id, v.status)
		}
		if v.turn != "" {
			err := h.c.Sessions.Cancel(ctx, v.ref.session, reducer.Actor{Kind: reducer.ActorOperator, ID: caller}, "cancelled by tasks/cancel")
			if err != nil && !errors.Is(err, session.ErrNoTurn) {
				return nil, fmt.Errorf("mcpserve: cancel task %s: %w", id, err)
			}
			if v, err = h.resolve(ctx, caller, id); err != nil {
				return nil, err
			}
			if v.terminal() {
				t := v.task()
				t["resultType"] = "complete"
				return t, nil
			}
		}
		if !sleep(ctx, deadline) {
			return nil, &rpcError{Code: -32000, Message: fmt.Sprintf("task %s: its turn did not start in time to be cancelled; try again", id)}
		}
	}
}

// response is one of inputResponses: an elicitation's result.
type response struct {
	Action  string `json:"action"`
	Content struct {
		Decision string          `json:"decision,omitempty"`
		Reason   string          `json:"reason,omitempty"`
		Input    json.RawMessage `json:"input,omitempty"`
		Verdict  string          `json:"verdict,omitempty"`
		Output   json.RawMessage `json:"output,omitempty"`
		Error    string          `json:"error,omitempty"`
	} `json:"content"`
}

// update answers tasks/update: each response answers the wait of its
// key. Responses to keys the task does not wait for are ignored, as the
// extension says; a response that cannot be taken (an unknown decision,
// an edit the tool's schema refuses) refuses the whole update before
// anything of it is written.
func (h *handler) update(ctx context.Context, caller, id string, rs map[string]json.RawMessage) (any, error) {
	v, err := h.resolve(ctx, caller, id)
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, invalid("tasks/update: inputResponses is required")
	}
	type step struct {
		w wait
		r response
	}
	var steps []step
	for _, key := range sortedKeys(rs) {
		i := slices.IndexFunc(v.waits, func(w wait) bool { return w.Key == key })
		if i < 0 {
			continue
		}
		var r response
		if err := json.Unmarshal(rs[key], &r); err != nil {
			return nil, invalid("inputResponses[%q]: %v", key, err)
		}
		if err := check(v.waits[i], &r); err != nil {
			return nil, invalid("inputResponses[%q]: %v", key, err)
		}
		steps = append(steps, step{v.waits[i], r})
	}
	actor := reducer.Actor{Kind: reducer.ActorOperator, ID: caller}
	for _, s := range steps {
		if s.r.Action == "cancel" {
			continue
		}
		if err := h.apply(ctx, v.ref.session, actor, s.w, s.r); err != nil {
			return nil, err
		}
	}
	return map[string]any{"resultType": "complete"}, nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// check validates r for w, and normalises it: decline is a deny, an
// accept without a decision approves, an edit's input given as a JSON
// string becomes the object.
func check(w wait, r *response) error {
	switch r.Action {
	case "accept", "":
		r.Action = "accept"
	case "decline":
		r.Content.Decision, r.Content.Verdict = "deny", "abandon"
	case "cancel":
		return nil
	default:
		return fmt.Errorf("action %q is not accept, decline or cancel", r.Action)
	}
	c := &r.Content
	switch w.Kind {
	case "approval":
		if c.Decision == "" {
			c.Decision = "approve"
		}
		switch c.Decision {
		case "approve", "deny":
		case "edit":
			var s string
			if json.Unmarshal(c.Input, &s) == nil {
				c.Input = json.RawMessage(s)
			}
			var obj map[string]json.RawMessage
			if len(c.Input) == 0 || json.Unmarshal(c.Input, &obj) != nil || obj == nil {
				return errors.New("an edit needs input: a JSON object")
			}
		default:
			return fmt.Errorf("decision %q is not approve, deny or edit", c.Decision)
		}
	case "execution":
		if c.Verdict != "rerun" && c.Verdict != "abandon" {
			return fmt.Errorf("verdict %q is not rerun or abandon", c.Verdict)
		}
	case "callback":
		if r.Action == "decline" {
			c.Error = "declined"
		}
		if (len(c.Output) == 0) == (c.Error == "") {
			return errors.New("give output or error")
		}
	}
	return nil
}

// apply records one checked response.
func (h *handler) apply(ctx context.Context, id string, actor reducer.Actor, w wait, r response) error {
	c := r.Content
	var err error
	switch w.Kind {
	case "approval":
		a := reducer.Answer{ApprovalID: w.Key, ToolCallID: w.ToolCallID, Decision: reducer.Decision(c.Decision), Reason: c.Reason}
		if c.Decision == "edit" {
			a.Input = c.Input
		}
		err = h.c.Sessions.Answer(ctx, id, actor, a)
	case "execution":
		err = h.c.Sessions.Settle(ctx, id, actor, w.Key, reducer.Verdict(c.Verdict))
	case "callback":
		res := callback.Result{Error: c.Error}
		if len(c.Output) > 0 {
			res.Output = c.Output
			var s string
			if json.Unmarshal(c.Output, &s) == nil && json.Valid([]byte(s)) {
				res.Output = json.RawMessage(s)
			}
		}
		err = h.c.Sessions.CompleteCall(ctx, id, w.ToolCallID, actor, res, "answered through tasks/update")
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, session.ErrNotPending), errors.Is(err, reducer.ErrBadAnswer), errors.Is(err, callback.ErrUnknown),
		errors.Is(err, callback.ErrDone), errors.Is(err, callback.ErrBadResult):
		return invalid("%s %s: %s", w.Kind, w.Key, reducer.RefusalReason(err))
	}
	return fmt.Errorf("mcpserve: answer %s %s: %w", w.Kind, w.Key, err)
}

// listTasks answers tasks/list: the caller's tasks of its sessions of
// served agents, newest sessions first, one page of sessions per call.
func (h *handler) listTasks(ctx context.Context, caller, cursor string) (any, *rpcError) {
	heads, next, err := h.c.Sessions.ByOwner(ctx, caller, 20, cursor)
	if err != nil {
		return nil, invalid("tasks/list: %v", err)
	}
	tasks := []map[string]any{}
	for _, hd := range heads {
		if !slices.Contains(h.c.Agents, hd.Agent) {
			continue
		}
		facts, err := h.c.Sessions.Facts(ctx, hd.Session, 0)
		if err != nil {
			return nil, rpcFrom(fmt.Errorf("mcpserve: list tasks of %s: %w", hd.Session, err))
		}
		for _, f := range facts {
			if f.Type != reducer.MessageReceived || f.Message == nil {
				continue
			}
			if v, err := h.resolve(ctx, caller, ref{hd.Session, f.Message.ID}.id()); err == nil {
				tasks = append(tasks, v.task())
			}
		}
	}
	res := map[string]any{"tasks": tasks}
	if next != "" {
		res["nextCursor"] = next
	}
	return res, nil
}
