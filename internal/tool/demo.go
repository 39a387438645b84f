package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
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

// IndexFiles is a demo read, index_files, that takes a second and reports
// its progress as it goes (Emit), for agents that name it.
func IndexFiles() Tool {
	return Tool{
		Name:        "index_files",
		Description: "Index the files of a directory; takes a second, and reports its progress.",
		Schema:      json.RawMessage(`{"type":"object","properties":{"dir":{"type":"string"}},"required":["dir"],"additionalProperties":false}`),
		Effect:      Read,
		Idempotent:  true,
		Run:         indexFiles,
	}
}

// indexFiles is index_files: three files, one every 400 ms, each reported
// as a data-progress part that replaces the one before it in the chat.
func indexFiles(ctx context.Context, c Call) (json.RawMessage, error) {
	var in struct {
		Dir string `json:"dir"`
	}
	if err := json.Unmarshal(c.Input, &in); err != nil || in.Dir == "" {
		return nil, fmt.Errorf("index_files: input needs a dir")
	}
	files := []string{"README.md", "main.go", "go.mod"}
	for i, f := range files {
		if !pause(ctx, 400*time.Millisecond) {
			return nil, ctx.Err()
		}
		if err := Emit(ctx, Data{Type: "progress", ID: "index-" + c.ID, Data: map[string]any{
			"done": i + 1, "of": len(files), "file": strings.TrimSuffix(in.Dir, "/") + "/" + f,
		}}); err != nil && !errors.Is(err, ErrNoStream) {
			return nil, err
		}
	}
	return json.Marshal(map[string]any{"dir": in.Dir, "files": len(files)})
}
