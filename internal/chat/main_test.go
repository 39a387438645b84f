package chat_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/testdev"
)

// base is the URL of the dev server every test of this package drives: the
// in-process emulator, the demo agent, the resume poller and the tick.
var base string

func TestMain(m *testing.M) { os.Exit(testdev.Run(m, baton.Template(), &base)) }

// chunk is one event of a UI message stream.
type chunk struct {
	Type       string          `json:"type"`
	MessageID  string          `json:"messageId"`
	Delta      string          `json:"delta"`
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	ApprovalID string          `json:"approvalId"`
	ErrorText  string          `json:"errorText"`
	Output     json.RawMessage `json:"output"`
	Finish     string          `json:"finishReason"`
	Data       json.RawMessage `json:"data"`
}

// client calls the dev server as operator who.
type client struct {
	t       testing.TB
	who     string
	version string
}

func (c client) request(ctx context.Context, method, path, body string) *http.Response {
	c.t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.who != "" {
		req.Header.Set("X-Baton-Operator", c.who)
	}
	if c.version != "" {
		req.Header.Set("X-Ai-Sdk-Version", c.version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// call sends a request and decodes a JSON answer into into, if not nil.
func (c client) call(ctx context.Context, method, path, body string, into any) (int, string) {
	c.t.Helper()
	resp := c.request(ctx, method, path, body)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if into != nil {
		if err := json.Unmarshal(raw, into); err != nil {
			c.t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, raw, err)
		}
	}
	return resp.StatusCode, string(raw)
}

// events reads a UI message stream to its end. onChunk, if set, sees each
// chunk as it arrives and may stop reading by returning false.
func events(t testing.TB, resp *http.Response, onChunk func(chunk) bool) (chunks []chunk, done bool) {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: %d %s", resp.StatusCode, raw)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || resp.Header.Get("X-Vercel-AI-UI-Message-Stream") != "v1" {
		t.Fatalf("stream headers: %v", resp.Header)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			return chunks, true
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		chunks = append(chunks, c)
		if onChunk != nil && !onChunk(c) {
			return chunks, false
		}
	}
	return chunks, false
}

func types(chunks []chunk) map[string]int {
	n := map[string]int{}
	for _, c := range chunks {
		n[c.Type]++
	}
	return n
}

func text(chunks []chunk) string {
	var b strings.Builder
	for _, c := range chunks {
		if c.Type == "text-delta" {
			b.WriteString(c.Delta)
		}
	}
	return b.String()
}

// userBody is a chat request whose last message is a new user message.
func userBody(chat, msg, text string, extra string) string {
	return fmt.Sprintf(`{"id":%q,"trigger":"submit-message","messages":[{"id":"m0","role":"user","parts":[{"type":"text","text":"earlier"}]},{"id":"a0","role":"assistant","parts":[]},{"id":%q,"role":"user","parts":[{"type":"text","text":%q}]}]%s}`, chat, msg, text, extra)
}

// approvalBody is a chat request answering approval on toolCall.
func approvalBody(chat, turn, toolCall, approval string, approved bool) string {
	return fmt.Sprintf(`{"id":%q,"trigger":"submit-message","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]},{"id":%q,"role":"assistant","parts":[{"type":"tool-send_email","toolCallId":%q,"state":"approval-responded","input":{},"approval":{"id":%q,"approved":%t}}]}]}`, chat, turn, toolCall, approval, approved)
}

var seq int

// newID returns a chat or message id unique in this test binary.
func newID(prefix string) string {
	seq++
	return fmt.Sprintf("%s%d%d", prefix, time.Now().UnixNano(), seq)
}
