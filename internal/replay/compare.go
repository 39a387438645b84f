package replay

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/baton-run/baton/internal/guard"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/replay/report"
	"github.com/baton-run/baton/pkg/turn"
)

// refusedPrefix starts the error a call gets whose input its tool's schema
// refuses (tool.InputError).
const refusedPrefix = "invalid input for tool "

// compare lists how replayed turn got diverged from recorded turn t, the
// agent being the one under test (its own tools, not the replay's).
func compare(agent *turn.Agent, t *recTurn, got *newTurn) []report.Divergence {
	var out []report.Divergence
	add := func(step int, kind report.Kind, call, tool, format string, args ...any) {
		out = append(out, report.Divergence{Turn: t.n, Step: step, Kind: kind, Call: call, Tool: tool, Detail: fmt.Sprintf(format, args...)})
	}
	for j, s := range t.steps {
		step := j + 1
		if len(got.steps) < step {
			break // StepsChanged says so
		}
		for _, c := range s.Calls {
			pos := position(t.id, c.ID)
			name, input := c.Name, c.Input
			if p, ok := t.calls[pos]; ok {
				name, input = p.ToolName, p.Input
			}
			if !has(agent, name) {
				add(step, report.ToolGone, c.ID, name, "the recording called %s; the agent has no such tool now, and the call gets an unknown-tool error", name)
				continue
			}
			rec, recHas := t.results[pos]
			recRefused := recHas && rec.Type == parts.ToolOutputError && strings.HasPrefix(rec.ErrorText, refusedPrefix)
			nowErr := agent.Tools.Check(name, input)
			switch {
			case nowErr != nil && !recRefused:
				add(step, report.ToolRefused, c.ID, name, "the schema now refuses the recorded input %s: %v", input, nowErr)
				continue
			case nowErr == nil && recRefused:
				add(step, report.ToolRefused, c.ID, name, "the schema now accepts the recorded input %s, which it refused (%s)", input, rec.ErrorText)
				continue
			case nowErr != nil:
				continue // refused then and now
			}
			diverged := false
			_, recAsked := t.asked[pos]
			_, nowAsked := got.asked[pos]
			switch {
			case nowAsked && !recAsked:
				diverged = true
				add(step, report.RuleChanged, c.ID, name, "the call now waits for an operator's approval; the recording ran it without asking (the replay approved it)")
			case recAsked && !nowAsked:
				diverged = true
				ans := "never answered"
				if a, ok := t.answers[pos]; ok {
					ans = "answered " + string(a.Decision)
				}
				add(step, report.RuleChanged, c.ID, name, "the call no longer waits for approval; the recording asked (%s)", ans)
			}
			var recClaims []json.RawMessage
			for _, cl := range t.grants[pos] {
				b, _ := json.Marshal(cl)
				recClaims = append(recClaims, b)
			}
			if a, b := claimText(recClaims), claimText(got.grants[pos]); a != b {
				diverged = true
				add(step, report.ClaimChanged, c.ID, name, "the recording claimed %s; the call now claims %s", a, b)
			}
			now, nowHas := got.results[pos]
			if !diverged && recHas != nowHas {
				add(step, report.ResultChanged, c.ID, name, "recorded %s; replayed %s", resultText(rec, recHas), resultText(now, nowHas))
			} else if !diverged && recHas && !sameResult(rec, now) {
				add(step, report.ResultChanged, c.ID, name, "recorded %s; replayed %s", resultText(rec, true), resultText(now, true))
			}
		}
	}
	// The guardrails' decisions (allow, block, redact, escalate), in turn.
	for k := range max(len(t.guards), len(got.guards)) {
		rec, now := at(t.guards, k), at(got.guards, k)
		if rec == now {
			continue
		}
		name, _, _ := strings.Cut(now, " ")
		if now == "" {
			name, _, _ = strings.Cut(rec, " ")
		}
		add(0, report.RuleChanged, "", guard.ToolPrefix+name, "guardrail decision %d: the recording's was %s; now %s", k+1, or(rec, "none"), or(now, "none"))
	}
	if len(t.steps) != len(got.steps) {
		add(0, report.StepsChanged, "", "", "the recording took %d model step(s); the replay took %d", len(t.steps), len(got.steps))
	}
	if t.end != got.end && !endsAlike(t, got) {
		add(0, report.OutcomeChanged, "", "", "the recorded turn ended %s; the replayed turn %s%s", t.end, got.end, failureText(got))
	} else if t.end == "completed" && got.end == "completed" {
		if a, b := answer(t.steps), answer(got.steps); a != b {
			add(0, report.AnswerChanged, "", "", "recorded %q; replayed %q", a, b)
		}
	}
	return out
}

// at is ss[k], "" past its end.
func at(ss []string, k int) string {
	if k < len(ss) {
		return ss[k]
	}
	return ""
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// has reports whether the agent has the named tool.
func has(agent *turn.Agent, name string) bool {
	if agent.Tools == nil {
		return false
	}
	_, ok := agent.Tools.Get(name)
	return ok
}

// endsAlike reports whether a replayed turn that failed where the
// recording ends (errRecordingEnds) ended as its recording did: cancelled,
// interrupted, or failed there.
func endsAlike(t *recTurn, got *newTurn) bool {
	if t.end == "interrupted" && got.end == "cancelled" {
		return true // stopped where the recording's message ended it
	}
	return got.end == "failed" && got.failure != nil && strings.Contains(got.failure.Error, errRecordingEnds.Error()) &&
		(t.end == "cancelled" || t.end == "interrupted" || t.end == "failed" || t.end == "open")
}

func failureText(got *newTurn) string {
	if got.failure == nil {
		return ""
	}
	return fmt.Sprintf(" (%s: %s)", got.failure.Kind, got.failure.Error)
}

// claimText is a list of claims, sorted, as text.
func claimText(cs []json.RawMessage) string {
	if len(cs) == 0 {
		return "nothing"
	}
	ss := make([]string, len(cs))
	for i, c := range cs {
		ss[i] = string(c)
	}
	slices.Sort(ss)
	return "[" + strings.Join(ss, ", ") + "]"
}

// sameResult reports whether two output parts give the model the same.
func sameResult(a, b parts.Part) bool {
	if a.Type != b.Type {
		return false
	}
	switch a.Type {
	case parts.ToolOutputAvailable:
		return sameJSON(a.Output, b.Output)
	case parts.ToolOutputError:
		return a.ErrorText == b.ErrorText
	}
	return true
}

// resultText describes an output part.
func resultText(p parts.Part, ok bool) string {
	switch {
	case !ok:
		return "no result"
	case p.Type == parts.ToolOutputAvailable:
		return "output " + string(p.Output)
	case p.Type == parts.ToolOutputError:
		return fmt.Sprintf("error %q", p.ErrorText)
	}
	return "denied"
}
