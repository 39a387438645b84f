package model

import "context"

// Counter is a Model whose provider counts a request's input tokens
// without running it (Anthropic's count_tokens, for one).
type Counter interface {
	CountTokens(ctx context.Context, req Request) (int64, error)
}

// Estimate is a request's input tokens as a rough, deterministic figure: a
// token for every four bytes of its system prompt, tool specs and message
// contents, with a few bytes for each block's framing. It errs high for
// English text and code, and reads each block once, allocating nothing.
func Estimate(req Request) int64 {
	n := len(req.System)
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Schema) + 16
	}
	for _, m := range req.Messages {
		n += 16
		for _, c := range m.Content {
			n += 24 + len(c.Text) + len(c.Signature) + len(c.ToolCallID) + len(c.ToolName) + len(c.Input) + len(c.Output)
		}
	}
	return int64(n/4 + 1)
}
