package model

import (
	"context"
	"encoding/json"
)

// Counter is a Model whose provider counts a request's input tokens
// without running it (Anthropic's count_tokens, for one).
type Counter interface {
	CountTokens(ctx context.Context, req Request) (int64, error)
}

// Estimate is a request's input tokens as a rough, deterministic figure: a
// token for every four bytes of its JSON (system prompt, messages and tool
// specs), which errs high for English text and code.
func Estimate(req Request) int64 {
	n := len(req.System)
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	b, _ := json.Marshal(req.Messages) // plain structs and raw JSON read back: cannot fail
	n += len(b)
	return int64(n/4 + 1)
}

// InputTokens is the request's input tokens as m's provider counts them
// when m is a Counter and near is true, else Estimate. A count that fails
// falls back to the estimate: the caller only decides with it.
func InputTokens(ctx context.Context, m Model, req Request, near bool) int64 {
	if c, ok := m.(Counter); ok && near {
		if n, err := c.CountTokens(ctx, req); err == nil && n > 0 {
			return n
		}
	}
	return Estimate(req)
}
