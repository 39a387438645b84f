package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// WaitUntilName is the name of the built-in timer tool. The turn runner
// treats a call to it specially: while its time is ahead, the turn
// suspends (reducer.CauseTimer) instead of running it.
const WaitUntilName = "wait_until"

// WaitUntil returns the built-in timer tool. Its input names a time
// (RFC 3339); once that time has come, its result says so. The result
// depends only on the input, so a replayed turn sees the same bytes.
func WaitUntil() Tool {
	return Tool{
		Name:        WaitUntilName,
		Description: "Pause this conversation until a time (RFC 3339, UTC), then continue. Use it to wait for hours or days.",
		Schema:      json.RawMessage(`{"type":"object","properties":{"until":{"type":"string","description":"RFC 3339 time, e.g. 2026-12-04T09:00:00Z"}},"required":["until"],"additionalProperties":false}`),
		Effect:      Read,
		Idempotent:  true,
		Run: func(_ context.Context, c Call) (json.RawMessage, error) {
			until, err := WaitTime(c.Input)
			if err != nil {
				return nil, err
			}
			return json.Marshal(map[string]string{"waited_until": until.Format(time.RFC3339)})
		},
	}
}

// WaitTime is the time a wait_until call's input names, in UTC.
func WaitTime(in json.RawMessage) (time.Time, error) {
	var v struct {
		Until string `json:"until"`
	}
	if err := json.Unmarshal(in, &v); err != nil {
		return time.Time{}, fmt.Errorf("wait_until: input: %w", err)
	}
	t, err := time.Parse(time.RFC3339, v.Until)
	if err != nil {
		return time.Time{}, fmt.Errorf("wait_until: until must be an RFC 3339 time: %w", err)
	}
	return t.UTC(), nil
}
