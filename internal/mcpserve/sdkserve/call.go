package sdkserve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/streams"
)

// call is the SDK's handler of a tools/call made without a task: it
// starts the turn and follows its stream within the hold, sending a
// progress notification for each step, tool call and approval request
// when the client gave a progress token. The result is the final answer;
// a turn that waits for a person, or outlasts the hold, is answered with
// its session and how to follow it (structuredContent: session, turn,
// task, status, waiting).
func (h *handler) call(agent string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		caller := ""
		if req.Extra != nil && req.Extra.TokenInfo != nil {
			caller = req.Extra.TokenInfo.UserID
		}
		if caller == "" {
			return nil, fmt.Errorf("mcpserve: %s: no caller", agent)
		}
		in, err := decodeInput(req.Params.Arguments)
		if err != nil {
			return failure(err.Error()), nil
		}
		r, err := h.start(ctx, caller, agent, in)
		if err != nil {
			if re, ok := errors.AsType[*rpcError](err); ok {
				return failure(re.Message), nil
			}
			return nil, err
		}
		deadline := time.Now().Add(h.hold)
		p := progress{req: req}
		cursor := streams.Cursor("")
		for {
			v, err := h.resolve(ctx, caller, r.id())
			if err != nil {
				return nil, err
			}
			if v.stream != "" {
				page, err := h.c.Sessions.ReadStream(ctx, r.session, v.stream, cursor)
				if err != nil {
					return nil, fmt.Errorf("mcpserve: follow %s: %w", r.session, err)
				}
				for _, e := range page.Entries {
					p.part(ctx, e.Part)
				}
				cursor = page.Cursor
			}
			if v.terminal() {
				res, err := h.result(ctx, v)
				if err != nil {
					return nil, err
				}
				return toolResult(res), nil
			}
			if v.status == inputRequired || !sleep(ctx, deadline) {
				return h.pending(v), nil
			}
		}
	}
}

// pending answers a call whose turn has not ended: what it waits for and
// how to follow it.
func (h *handler) pending(v *view) *mcp.CallToolResult {
	how := fmt.Sprintf("Session %s, turn %s is %s: %s. Follow it with GET /sessions/%s (or tasks/get %s); ",
		v.ref.session, v.turn, v.status, v.message, v.ref.session, v.ref.id())
	if v.status == inputRequired {
		how += fmt.Sprintf("answer an approval with POST /sessions/%s/approvals/{approvalId}, or tasks/update on task %s.", v.ref.session, v.ref.id())
	} else {
		how += fmt.Sprintf("read its answer with tasks/result %s, or GET /sessions/%s/turns/%s/stream.", v.ref.id(), v.ref.session, v.turn)
	}
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: how}},
		StructuredContent: map[string]any{"session": v.ref.session, "turn": v.turn, "task": v.ref.id(),
			"status": v.status, "statusMessage": v.message, "waiting": v.waits},
	}
}

func failure(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: msg}}, IsError: true}
}

// toolResult makes result's map the SDK's CallToolResult.
func toolResult(res map[string]any) *mcp.CallToolResult {
	text := ""
	if c, ok := res["content"].([]map[string]any); ok && len(c) > 0 {
		text, _ = c[0]["text"].(string)
	}
	isError, _ := res["isError"].(bool)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: res["structuredContent"], IsError: isError}
}

// progress sends a call's progress notifications, one per step, tool call
// and approval request, each naming it.
type progress struct {
	req  *mcp.CallToolRequest
	n    float64
	text strings.Builder
}

func (p *progress) part(ctx context.Context, pt parts.Part) {
	var msg string
	switch pt.Type {
	case parts.TextDelta:
		p.text.WriteString(pt.Delta)
		return
	case parts.FinishStep:
		msg = "step: " + p.text.String()
		p.text.Reset()
	case parts.ToolInputAvailable:
		msg = fmt.Sprintf("calling %s %s", pt.ToolName, pt.Input)
	case parts.ToolApprovalRequest:
		msg = fmt.Sprintf("approval %s requested for call %s", pt.ApprovalID, pt.ToolCallID)
	case parts.ToolOutputAvailable:
		msg = fmt.Sprintf("call %s returned %s", pt.ToolCallID, pt.Output)
	default:
		return
	}
	tok := p.req.Params.GetProgressToken()
	if tok == nil {
		return
	}
	p.n++
	_ = p.req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: p.n, Message: msg})
}
