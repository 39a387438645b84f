package webapp_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The long turn: pre steps of four words each, every one calling
// get_weather, then a step calling send_email (which needs approval), then
// a last step. Each step sends its first two words at once and the other
// two after pause: text every pause, for the whole turn.
const (
	pre   = 8
	pause = 400 * time.Millisecond
)

var steps = func() [][]string {
	out := make([][]string, pre+2)
	for i := range out {
		for j := 1; j <= 4; j++ {
			out[i] = append(out[i], fmt.Sprintf("s%dw%d", i, j))
		}
	}
	return out
}()

// reply is the reply's text as the page shows it (text parts joined by
// " ") up to step n, exclusive.
func reply(n int) string {
	var parts []string
	for _, s := range steps[:n] {
		parts = append(parts, strings.Join(s, " "))
	}
	return strings.Join(parts, " ")
}

// modelServer is an OpenAI-compatible chat completions endpoint (what the
// agents' openai provider calls, by baseURL) that streams the long turn
// and records when it sent each word: the model's events, timed where
// they happen, whichever process runs the turn.
type modelServer struct {
	*httptest.Server
	mu   sync.Mutex
	when map[string]time.Time
}

func newModelServer(t *testing.T) *modelServer {
	m := &modelServer{when: map[string]time.Time{}}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

// at is when the model last sent word: every chat's reply has the same
// words, and the chats run one after another.
func (m *modelServer) at(word string) (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.when[word]
	return t, ok
}

func (m *modelServer) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, `{"error":{"message":"not a chat completion"}}`, http.StatusBadRequest)
		return
	}
	step := 0
	for _, msg := range req.Messages {
		if msg.Role == "assistant" {
			step++
		}
	}
	if step >= len(steps) {
		http.Error(w, `{"error":{"message":"the script is over"}}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	send := func(delta any, finish any) {
		writeChunk(w, "long", delta, finish)
		rc.Flush()
	}
	words := steps[step]
	for i, word := range words {
		if i == 2 {
			select {
			case <-time.After(pause):
			case <-r.Context().Done():
				return
			}
		}
		m.mu.Lock()
		m.when[word] = time.Now()
		m.mu.Unlock()
		text := word
		if i < len(words)-1 {
			text += " "
		}
		send(map[string]any{"role": "assistant", "content": text}, nil)
	}
	finish := "tool_calls"
	switch {
	case step < pre:
		send(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": fmt.Sprintf("call_%d", step), "type": "function",
			"function": map[string]any{"name": "get_weather", "arguments": fmt.Sprintf(`{"city":"City%d"}`, step)}}}}, nil)
	case step == pre:
		send(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_email", "type": "function",
			"function": map[string]any{"name": "send_email", "arguments": `{"to":"team@example.com","subject":"status","body":"All clear."}`}}}}, nil)
	default:
		finish = "stop"
	}
	send(map[string]any{}, finish)
	writeEnd(w, "long", 100, 10)
	rc.Flush()
}

// writeChunk writes one chat completion chunk of model as an SSE event.
func writeChunk(w io.Writer, model string, delta, finish any) {
	b, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk", "created": 0, "model": model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
	fmt.Fprintf(w, "data: %s\n\n", b)
}

// writeEnd writes the usage chunk of model and the stream's end.
func writeEnd(w io.Writer, model string, in, out int) {
	b, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk", "created": 0, "model": model, "choices": []any{},
		"usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}})
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
}

// newIndexModel is an OpenAI-compatible endpoint for agent "indexer": its
// first step calls index_files (a demo tool that reports its progress as
// it runs), its second says so.
func newIndexModel(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		if json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, `{"error":{"message":"not a chat completion"}}`, http.StatusBadRequest)
			return
		}
		step := 0
		for _, msg := range req.Messages {
			if msg.Role == "assistant" {
				step++
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta any, finish any) { writeChunk(w, "indexer", delta, finish) }
		if step == 0 {
			chunk(map[string]any{"role": "assistant", "content": "Indexing."}, nil)
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_index", "type": "function",
				"function": map[string]any{"name": "index_files", "arguments": `{"dir":"/srv"}`}}}}, nil)
			chunk(map[string]any{}, "tool_calls")
		} else {
			chunk(map[string]any{"role": "assistant", "content": "Indexed three files."}, nil)
			chunk(map[string]any{}, "stop")
		}
		writeEnd(w, "indexer", 10, 5)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// newEchoModel is an OpenAI-compatible endpoint for agent "echo": one
// step that says what the last user message said, numbered by the
// requests it has answered, so that a regenerated answer differs.
func newEchoModel(t *testing.T) *httptest.Server {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, `{"error":{"message":"not a chat completion"}}`, http.StatusBadRequest)
			return
		}
		last := ""
		for _, msg := range req.Messages {
			if msg.Role != "user" {
				continue
			}
			var s string
			if json.Unmarshal(msg.Content, &s) != nil {
				var blocks []struct {
					Text     string `json:"text"`
					ImageURL struct {
						URL string `json:"url"`
					} `json:"image_url"`
				}
				_ = json.Unmarshal(msg.Content, &blocks)
				for _, b := range blocks {
					s += b.Text
					if u := b.ImageURL.URL; u != "" {
						// An image input: said back by its type and digest,
						// so the page shows what the model got.
						s += " " + imageSeen(u)
					}
				}
			}
			last = s
		}
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		writeChunk(w, "echo", map[string]any{"role": "assistant", "content": fmt.Sprintf("You said: %s (answer %d)", last, k)}, nil)
		writeChunk(w, "echo", map[string]any{}, "stop")
		writeEnd(w, "echo", 10, 5)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// agentFile writes the agent file: agent "long" on the model server, with
// the demo tools and a 100 ms live flush, agent "indexer" on idx, and
// agent "echo" on echo.
func agentFile(t *testing.T, m *modelServer, idx, echo *httptest.Server) string {
	t.Helper()
	cfg := map[string]any{"agents": map[string]any{"echo": map[string]any{
		"provider": "openai", "model": "echo", "baseURL": echo.URL + "/v1/", "apiKeyEnv": "WEBAPP_MODEL_KEY",
		"system": "Say what the user said.", "limits": map[string]any{"budget": "60s", "margin": "5s", "liveFlush": "100ms"},
	}, "indexer": map[string]any{
		"provider": "openai", "model": "indexer", "baseURL": idx.URL + "/v1/", "apiKeyEnv": "WEBAPP_MODEL_KEY",
		"system": "Index files.", "tools": []string{"index_files"},
		"limits": map[string]any{"budget": "60s", "margin": "5s", "liveFlush": "100ms"},
	}, "long": map[string]any{
		"provider": "openai", "model": "long", "baseURL": m.URL + "/v1/", "apiKeyEnv": "WEBAPP_MODEL_KEY",
		"system": "A long turn for the browser test.", "tools": []string{"get_weather", "send_email"},
		"limits": map[string]any{"budget": "60s", "margin": "5s", "maxStepsPerInvocation": 30, "maxStepsPerTurn": 30,
			"approvalTTL": "1h", "liveFlush": "100ms"},
	}}}
	b, err := json.MarshalIndent(cfg, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "agents.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// imageSeen names the image of data URL u as the echo model says it
// back: "[image <media type> sha256:<first 12 hex>]".
func imageSeen(u string) string {
	meta, payload, _ := strings.Cut(strings.TrimPrefix(u, "data:"), ",")
	b, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return "[image that does not decode]"
	}
	sum := sha256.Sum256(b)
	return fmt.Sprintf("[image %s sha256:%x]", strings.TrimSuffix(meta, ";base64"), sum[:6])
}
