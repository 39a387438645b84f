package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Demo returns the demo agent's tools: two reads and one write that needs
// approval. Their results are deterministic, so scripted turns replay
// byte for byte.
func Demo() []Tool {
	return []Tool{
		{
			Name:        "get_weather",
			Description: "Current weather for a city.",
			Schema:      json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`),
			Effect:      Read,
			Idempotent:  true,
			Run: func(_ context.Context, c Call) (json.RawMessage, error) {
				var in struct {
					City string `json:"city"`
				}
				if err := json.Unmarshal(c.Input, &in); err != nil || in.City == "" {
					return nil, fmt.Errorf("get_weather: input needs a city")
				}
				temp := 10 + len(in.City)%15
				return json.Marshal(map[string]any{"city": in.City, "tempC": temp, "sky": "clear"})
			},
		},
		{
			Name:        "search_docs",
			Description: "Search the team's documents.",
			Schema:      json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"],"additionalProperties":false}`),
			Effect:      Read,
			Idempotent:  true,
			Run: func(_ context.Context, c Call) (json.RawMessage, error) {
				var in struct {
					Query string `json:"query"`
				}
				if err := json.Unmarshal(c.Input, &in); err != nil || in.Query == "" {
					return nil, fmt.Errorf("search_docs: input needs a query")
				}
				return json.Marshal(map[string]any{"query": in.Query, "hits": []string{
					"runbook/" + strings.ReplaceAll(strings.ToLower(in.Query), " ", "-") + ".md",
				}})
			},
		},
		{
			Name:          "send_email",
			Description:   "Send an email. An operator must approve every email.",
			Schema:        json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"},"subject":{"type":"string"},"body":{"type":"string"}},"required":["to","subject"],"additionalProperties":false}`),
			Effect:        External,
			Idempotent:    true,
			NeedsApproval: Always,
			Run: func(_ context.Context, c Call) (json.RawMessage, error) {
				var in struct {
					To      string `json:"to"`
					Subject string `json:"subject"`
				}
				if err := json.Unmarshal(c.Input, &in); err != nil || in.To == "" {
					return nil, fmt.Errorf("send_email: input needs a recipient")
				}
				return json.Marshal(map[string]any{"sent": true, "to": in.To, "messageId": "msg-" + c.IdempotencyKey})
			},
		},
	}
}
