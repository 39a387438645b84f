package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

// ErrBadExport is an export that cannot be replayed: it has no
// session.created fact, or a turn without its stream.
var ErrBadExport = errors.New("replay: not a session export")

// recording is a recorded session, read from its export.
type recording struct {
	session, agent, owner string
	turns                 []*recTurn
	// steered counts messages delivered into a running turn, which the
	// replay posts as messages of their own.
	steered int
}

// recTurn is one recorded turn.
type recTurn struct {
	n          int
	id, stream string
	// msgs are the messages received since the turn before started: the
	// replay posts them before it runs the turn.
	msgs  []reducer.Message
	steps []*conversation.Step
	// calls, by position (see position), are the tool-input-available
	// parts the model's steps made; results the output parts answering
	// them; asked the approvals requested, answers their answers, grants
	// the claims granted.
	calls   map[string]parts.Part
	results map[string]parts.Part
	asked   map[string]reducer.Approval
	answers map[string]reducer.Answer
	grants  map[string][]claims.Claim
	raises  []reducer.Raise
	// end is how the turn ended: the ending fact's type without "turn.",
	// or "open".
	end     string
	failure *reducer.Failure
	// guards are the turn's guardrail decisions, in order (see decision).
	guards []string
	// print is the agent's fingerprint as the turn started.
	print string
	// aborted is set when the recorded model failed after its last step:
	// the replay's model fails there too.
	aborted string
}

// endOf names how a turn ended for a report.
func endOf(t reducer.Type) string { return strings.TrimPrefix(string(t), "turn.") }

// position is a call's place in its turn, from baton's id for it: a tool
// call's tc_<turn>_<step>_<call> is "tc_<step>_<call>", a guardrail
// escalation's gr_<turn>_<k> is "gr_<k>"; the same for the recorded call
// and the replayed one. An id of another turn is "".
func position(turn, callID string) string {
	for _, prefix := range []string{"tc_", "gr_"} {
		if rest, ok := strings.CutPrefix(callID, prefix+strings.TrimPrefix(turn, "turn_")+"_"); ok {
			return prefix + rest
		}
	}
	return ""
}

// read reads an export into a recording.
func read(exp api.Export) (*recording, error) {
	rec := &recording{session: exp.Session}
	streams := map[string][]parts.Part{}
	for _, s := range exp.Streams {
		streams[s.Turn] = s.Parts
	}
	byID := map[string]*recTurn{}
	var open *recTurn
	var waiting []reducer.Message
	turnOfCall := func(call string) *recTurn {
		for _, t := range rec.turns {
			if position(t.id, call) != "" {
				return t
			}
		}
		return nil
	}
	for _, f := range exp.Facts {
		switch f.Type {
		case reducer.SessionCreated:
			rec.agent, rec.owner = f.Agent, f.Owner
		case reducer.MessageReceived:
			if f.Message != nil {
				if f.Message.Delivery == reducer.SteerSteer && open != nil && open.end == "open" {
					rec.steered++
				}
				waiting = append(waiting, *f.Message)
			}
		case reducer.TurnStarted:
			t := &recTurn{n: len(rec.turns) + 1, id: f.Turn, stream: f.Stream, msgs: waiting, end: "open",
				calls: map[string]parts.Part{}, results: map[string]parts.Part{}, asked: map[string]reducer.Approval{},
				answers: map[string]reducer.Answer{}, grants: map[string][]claims.Claim{}}
			if f.Version != nil {
				t.print = f.Version.Fingerprint
			}
			waiting = nil
			rec.turns = append(rec.turns, t)
			byID[f.Turn] = t
			open = t
		case reducer.ApprovalRequested:
			if f.Approval != nil {
				if t := turnOfCall(f.Approval.ToolCallID); t != nil {
					t.asked[position(t.id, f.Approval.ToolCallID)] = *f.Approval
				}
			}
		case reducer.ApprovalAnswered:
			if f.Answer != nil {
				if t := turnOfCall(f.Answer.ToolCallID); t != nil {
					a := *f.Answer
					a.By, a.ByKind = f.Actor.ID, f.Actor.Kind
					t.answers[position(t.id, f.Answer.ToolCallID)] = a
				}
			}
		case reducer.ClaimGranted:
			if f.Grant != nil {
				if t := byID[f.Grant.Turn]; t != nil {
					t.grants[position(t.id, f.Grant.ToolCall)] = f.Grant.Claims
				}
			}
		case reducer.GuardDecided:
			if t := byID[f.Turn]; t != nil && f.Guard != nil {
				t.guards = append(t.guards, decision(f))
			}
		case reducer.LimitsRaised:
			if open != nil && f.Raise != nil {
				open.raises = append(open.raises, *f.Raise)
			}
		}
		if f.Ends() {
			if t := byID[f.Turn]; t != nil {
				t.end, t.failure = endOf(f.Type), f.Failure
			}
		}
	}
	if rec.agent == "" {
		return nil, fmt.Errorf("%w: it has no session.created fact", ErrBadExport)
	}
	for _, t := range rec.turns {
		ps, ok := streams[t.stream]
		if !ok {
			return nil, fmt.Errorf("%w: turn %s has no stream %s", ErrBadExport, t.id, t.stream)
		}
		t.steps = conversation.Replay(ps).Steps
		for _, p := range ps {
			switch p.Type {
			case parts.ToolInputAvailable:
				t.calls[position(t.id, p.ToolCallID)] = p
			case parts.ToolOutputAvailable, parts.ToolOutputError, parts.ToolOutputDenied:
				t.results[position(t.id, p.ToolCallID)] = p
			}
		}
		if t.failure != nil && t.failure.Kind == reducer.FailModel {
			t.aborted = t.failure.Error
		}
	}
	return rec, nil
}

// decision is a guardrail.decided fact's decision as the report names
// it: "<guardrail> <stage> <action>".
func decision(f reducer.Fact) string {
	return f.Guard.Guardrail + " " + string(f.Guard.Stage) + " " + string(f.Guard.Action)
}

// answer is the recorded text of a turn: the text of its last step.
func answer(steps []*conversation.Step) string {
	if len(steps) == 0 {
		return ""
	}
	var b strings.Builder
	for _, c := range steps[len(steps)-1].Content {
		if c.Type == conversation.Text {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	ma, _ := json.Marshal(x)
	mb, _ := json.Marshal(y)
	return string(ma) == string(mb)
}
