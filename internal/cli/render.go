package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

// ANSI styles of the rendering on a terminal.
const (
	styleDim    = "\x1b[2m"
	styleBold   = "\x1b[1m"
	styleRed    = "\x1b[31m"
	styleGreen  = "\x1b[32m"
	styleYellow = "\x1b[33m"
	styleCyan   = "\x1b[36m"
	styleReset  = "\x1b[0m"
)

// maxShown is how much of a tool's input or output a line shows.
const maxShown = 300

// renderer writes a session's stream parts for a person to read, or as
// JSON lines.
type renderer struct {
	w       io.Writer
	session string
	color   bool
	json    bool
	// midLine is whether the last thing written did not end a line.
	midLine bool
	// block is the open text or reasoning block's type, "" when none.
	block parts.Type
	// calls remembers each tool call's name and input for its approval.
	calls map[string]parts.Part
}

func newRenderer(w io.Writer, session string, color, asJSON bool) *renderer {
	return &renderer{w: w, session: session, color: color, json: asJSON, calls: map[string]parts.Part{}}
}

func (r *renderer) style(s, text string) string {
	if !r.color || text == "" {
		return text
	}
	return s + text + styleReset
}

// line writes one whole line, ending the current one first.
func (r *renderer) line(format string, args ...any) {
	r.endLine()
	fmt.Fprintf(r.w, format+"\n", args...)
}

func (r *renderer) endLine() {
	if r.midLine {
		fmt.Fprintln(r.w)
		r.midLine = false
	}
}

func (r *renderer) inline(s string) {
	if s == "" {
		return
	}
	fmt.Fprint(r.w, s)
	r.midLine = !strings.HasSuffix(s, "\n")
}

// note writes a line about the tail itself.
func (r *renderer) note(format string, args ...any) {
	if r.json {
		return
	}
	r.line("%s", r.style(styleDim, "· "+fmt.Sprintf(format, args...)))
}

func (r *renderer) turnStarted(turn string) {
	if r.json {
		return
	}
	r.line("%s", r.style(styleBold, "── turn "+turn+" ──"))
	r.block = ""
}

func (r *renderer) turnClosed() {
	if r.json {
		return
	}
	r.endLine()
}

// fact renders what a fact says that the turn streams do not: messages
// received, and why a turn was cancelled or failed.
func (r *renderer) fact(f reducer.Fact) {
	if r.json {
		return
	}
	switch f.Type {
	case reducer.MessageReceived:
		if f.Message != nil {
			text := strings.ReplaceAll(strings.TrimRight(f.Message.Text, "\n"), "\n", "\n  ")
			r.line("%s %s", r.style(styleBold, "› "+f.Actor.ID+":"), text)
		}
	case reducer.TurnCancelled:
		msg := "· turn " + f.Turn + " cancelled by " + f.Actor.ID
		if f.Reason != "" {
			msg += ": " + f.Reason
		}
		r.line("%s", r.style(styleDim, msg))
	case reducer.TurnInterrupted:
		r.line("%s", r.style(styleDim, "· turn "+f.Turn+" interrupted by a new message"))
	case reducer.ContextCompacted:
		if c := f.Compaction; c != nil {
			r.line("%s", r.style(styleDim, fmt.Sprintf("· context compacted: %d turns summarised, %d → %d input tokens", c.Turns, c.Before, c.After)))
		}
	case reducer.TurnFailed:
		msg := "✗ turn " + f.Turn + " failed"
		if f.Failure != nil {
			msg += " (" + string(f.Failure.Kind) + "): " + f.Failure.Error
		}
		r.line("%s", r.style(styleRed, msg))
	}
}

// part renders one stream part of turn.
func (r *renderer) part(e api.StreamEntry, turn string) {
	if r.json {
		b, err := json.Marshal(struct {
			Turn   string   `json:"turn"`
			Cursor string   `json:"cursor"`
			Part   api.Part `json:"part"`
		}{turn, e.Cursor, e.Part})
		if err == nil {
			fmt.Fprintf(r.w, "%s\n", b)
		}
		return
	}
	p := e.Part
	switch p.Type {
	case parts.TextStart, parts.ReasoningStart:
		r.endLine()
		r.block = p.Type
		if p.Type == parts.ReasoningStart {
			r.inline(r.style(styleDim, "thinking: "))
		}
	case parts.TextDelta:
		r.inline(p.Delta)
	case parts.ReasoningDelta:
		// Reasoning stays on one dimmed line.
		r.inline(r.style(styleDim, strings.ReplaceAll(p.Delta, "\n", " ")))
	case parts.TextEnd, parts.ReasoningEnd:
		r.endLine()
		r.block = ""
	case parts.ToolInputAvailable:
		r.calls[p.ToolCallID] = p
		r.line("%s %s(%s)", r.style(styleCyan, "→"), r.style(styleBold, p.ToolName), clipText(compact(p.Input), maxShown))
	case parts.ToolOutputAvailable:
		r.line("%s %s", r.style(styleCyan, "←"), clipText(compact(p.Output), maxShown))
	case parts.ToolOutputError:
		r.line("%s %s", r.style(styleRed, "← error:"), clipText(p.ErrorText, maxShown))
	case parts.ToolOutputDenied:
		r.line("%s", r.style(styleYellow, "← denied"))
	case parts.ToolApprovalRequest, parts.ToolApprovalResponse:
		r.approval(p)
	case parts.DataSuspended, parts.DataResumed, parts.DataAbandoned, parts.DataSteered, parts.DataCompacted, parts.DataEdited:
		r.data(p)
	case parts.DataRedone:
		r.line("%s", r.style(styleDim, "↺ calls cut short are redone"+dataSuffix(p.Data, "reason", "")))
	case parts.DataGuardrail:
		r.guardrail(p)
	case parts.Error:
		r.line("%s %s", r.style(styleRed, "✗ error:"), p.ErrorText)
	default:
		if p.ToolData() {
			// A tool's own data part: its progress, say.
			r.line("  %s %s", r.style(styleDim, strings.TrimPrefix(string(p.Type), "data-")+":"), clipText(compact(p.Data), maxShown))
		}
	case parts.Finish:
		reason := ""
		if p.FinishReason != "" {
			reason = " (" + p.FinishReason + ")"
		}
		r.line("%s", r.style(styleBold, "── finished"+reason+" ──"))
	}
}

// approval shows an approval's request, with how to answer it, or its answer.
func (r *renderer) approval(p parts.Part) {
	switch p.Type {
	case parts.ToolApprovalRequest:
		call := r.calls[p.ToolCallID]
		what := "a tool call"
		if call.ToolName != "" {
			what = call.ToolName + "(" + clipText(compact(call.Input), maxShown) + ")"
		}
		r.line("%s %s needs approval %s", r.style(styleYellow, "?"), what, r.style(styleBold, p.ApprovalID))
		r.line("  baton approve %s %s", r.session, p.ApprovalID)
		r.line("  baton deny %s %s --reason ...", r.session, p.ApprovalID)
		r.line("  baton approve %s %s --input '{...}'   (or respond with a result)", r.session, p.ApprovalID)
	case parts.ToolApprovalResponse:
		if p.Approved != nil && *p.Approved {
			r.line("%s approval %s approved", r.style(styleGreen, "✓"), p.ApprovalID)
		} else {
			msg := "approval " + p.ApprovalID + " denied"
			if p.Reason != "" {
				msg += ": " + p.Reason
			}
			r.line("%s %s", r.style(styleRed, "✗"), msg)
		}
	}
}

// guardrail shows a guardrail's decision: what it did, and why.
func (r *renderer) guardrail(p parts.Part) {
	var d conversation.GuardrailData
	_ = json.Unmarshal(p.Data, &d) // a part that does not decode shows little
	what := "⛨ guardrail " + d.Guardrail + " (" + d.Stage + "): " + d.Action
	if d.Reason != "" {
		what += ": " + d.Reason
	}
	if d.Discarded {
		what += " — the step above is retracted"
	}
	color := styleYellow
	if d.Action == "block" {
		color = styleRed
	}
	r.line("%s", r.style(color, what))
	if d.Action == "escalate" && d.Approval != "" {
		r.line("  baton approve %s %s", r.session, d.Approval)
		r.line("  baton deny %s %s --reason ...", r.session, d.Approval)
	}
}

// data shows what a data part says about the turn.
func (r *renderer) data(p parts.Part) {
	switch p.Type {
	case parts.DataSuspended:
		r.line("%s", r.style(styleDim, "⏸ suspended"+dataSuffix(p.Data, "cause", "")))
	case parts.DataResumed:
		r.line("%s", r.style(styleDim, "▶ resumed"+dataSuffix(p.Data, "invocation", "invocation ")))
	case parts.DataAbandoned:
		r.line("%s", r.style(styleDim, "↺ partial step dropped"+dataSuffix(p.Data, "reason", "")))
	case parts.DataSteered:
		var d struct {
			Messages []struct {
				Text string `json:"text"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(p.Data, &d) // a part that does not decode shows nothing
		for _, m := range d.Messages {
			r.line("%s %s", r.style(styleBold, "› steered in:"), m.Text)
		}
	case parts.DataEdited:
		var d struct {
			Input json.RawMessage `json:"input"`
			By    string          `json:"by"`
		}
		_ = json.Unmarshal(p.Data, &d) // a part that does not decode shows little
		by := ""
		if d.By != "" {
			by = " by " + d.By
		}
		r.line("%s %s", r.style(styleYellow, "✎ edited"+by+" to"), clipText(compact(d.Input), maxShown))
	case parts.DataCompacted:
		if steps := dataSuffix(p.Data, "steps", "steps: "); steps != "" {
			r.line("%s", r.style(styleDim, "⇣ the turn's earlier steps summarised"+steps))
		} else {
			r.line("%s", r.style(styleDim, "⇣ older history summarised"+dataSuffix(p.Data, "turns", "turns: ")))
		}
	}
}

// dataSuffix is " (LABELVALUE)" for the field key of a data part's
// payload, or "" when it has none.
func dataSuffix(data json.RawMessage, key, label string) string {
	var m map[string]any
	if json.Unmarshal(data, &m) != nil || m[key] == nil {
		return ""
	}
	return fmt.Sprintf(" (%s%v)", label, m[key])
}

// compact is JSON on one line.
func compact(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// clipText shortens s to at most n bytes, on a rune boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for i := n; i > 0; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i] + "…"
		}
	}
	return "…"
}
