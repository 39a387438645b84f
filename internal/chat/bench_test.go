package chat_test

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// BenchmarkChatFirstText measures, in the dev server with the demo agent,
// the time from a chat POST to the first text chunk at a plain HTTP
// client reading the SSE answer. The demo's scripted model waits 400ms
// before its first step and the agent flushes live every 250ms, so those
// bound it from below. Run with -benchtime 5x.
func BenchmarkChatFirstText(b *testing.B) {
	ctx := context.Background()
	c := client{t: b, who: "bench", version: "7"}
	var total time.Duration
	for b.Loop() {
		id := newID("bench")
		start := time.Now()
		var first time.Duration
		events(b, c.request(ctx, "POST", "/chat", userBody(id, newID("m"), "Send the team a status update", "")), func(ch chunk) bool {
			if ch.Type == "text-delta" {
				first = time.Since(start)
				return false
			}
			return true
		})
		if first == 0 {
			b.Fatal("no text chunk")
		}
		total += first
		if code, body := c.call(ctx, "POST", "/chat/"+id+"/stop", "", nil); code != http.StatusAccepted {
			b.Fatalf("stop: %d %s", code, body)
		}
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-first-text/op")
}

// BenchmarkApprovalFirstChunk measures the time from an approval sent
// through POST /chat to the first chunk of the resumed turn at the client.
// It includes the wake and the resume of the turn by the dev server's
// poller. Run with -benchtime 5x.
func BenchmarkApprovalFirstChunk(b *testing.B) {
	ctx := context.Background()
	c := client{t: b, who: "bench", version: "7"}
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		id := newID("bench")
		chunks, _ := events(b, c.request(ctx, "POST", "/chat", userBody(id, newID("m"), "Send the team a status update", "")), nil)
		var req chunk
		for _, ch := range chunks {
			if ch.Type == "tool-approval-request" {
				req = ch
			}
		}
		if req.ApprovalID == "" {
			b.Fatalf("no approval request: %v", types(chunks))
		}
		b.StartTimer()
		start := time.Now()
		var first time.Duration
		events(b, c.request(ctx, "POST", "/chat", approvalBody(id, chunks[0].MessageID, req.ToolCallID, req.ApprovalID, true)), func(ch chunk) bool {
			if ch.Type == "start" { // the endpoint's own, naming the message
				return true
			}
			first = time.Since(start)
			return false
		})
		if first == 0 {
			b.Fatal("no chunk after the approval")
		}
		total += first
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-first-chunk/op")
}
