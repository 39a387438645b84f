package providertest

import (
	"bytes"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/pkg/conversation"
)

// Reply is one scripted HTTP response.
type Reply struct {
	// Status defaults to 200.
	Status int
	Header http.Header
	// Chunks are written and flushed one by one.
	Chunks [][]byte
	// Abort cuts the connection after the chunks, as a broken stream.
	Abort bool
	// Hold keeps the response open after the chunks until the client goes
	// away, as a model still thinking.
	Hold bool
	// Drop closes the connection before any response, as a connection
	// dropped by the server or a proxy.
	Drop bool
}

// Request is a request the server received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// Server replays replies in order; once they run out it repeats the last.
// While it is down (see Down), every request gets the down reply instead
// and the replies wait.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	replies  []Reply
	next     int
	down     *Reply
	requests []Request
}

// Down makes every request get rep until Up is called.
func (s *Server) Down(rep Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = &rep
}

// Up ends Down: requests get the replies again, from where they were.
func (s *Server) Up() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = nil
}

// NewServer starts a Server closed when the test ends.
func NewServer(tb testing.TB, replies ...Reply) *Server {
	tb.Helper()
	if len(replies) == 0 {
		tb.Fatal("providertest: no replies")
	}
	s := &Server{replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.Close)
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	var rep Reply
	if s.down != nil {
		rep = *s.down
	} else {
		rep = s.replies[min(s.next, len(s.replies)-1)]
		s.next++
	}
	s.mu.Unlock()

	if rep.Drop {
		hj, ok := w.(http.Hijacker)
		if !ok {
			panic(http.ErrAbortHandler)
		}
		conn, _, err := hj.Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}

	for k, vs := range rep.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	flusher, _ := w.(http.Flusher)
	for _, c := range rep.Chunks {
		if _, err := w.Write(c); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	if rep.Hold {
		<-r.Context().Done()
	}
	if rep.Abort {
		panic(http.ErrAbortHandler)
	}
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// SSE renders server-sent events: each pair is an event name (empty for
// none) and its data line.
func SSE(pairs ...string) []byte {
	var b bytes.Buffer
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] != "" {
			b.WriteString("event: ")
			b.WriteString(pairs[i])
			b.WriteByte('\n')
		}
		b.WriteString("data: ")
		b.WriteString(pairs[i+1])
		b.WriteString("\n\n")
	}
	return b.Bytes()
}

// Collect drains a step's stream.
func Collect(seq iter.Seq2[model.Event, error]) ([]model.Event, error) {
	var out []model.Event
	for ev, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// Text joins the deltas of one type.
func Text(events []model.Event, t model.EventType) string {
	var b bytes.Buffer
	for _, e := range events {
		if e.Type == t {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

// Calls returns the tool calls.
func Calls(events []model.Event) []model.Call {
	var out []model.Call
	for _, e := range events {
		if e.Type == model.ToolCall {
			out = append(out, e.Call)
		}
	}
	return out
}

// WeatherTool is a tool spec with a real JSON Schema.
func WeatherTool() model.ToolSpec {
	return model.ToolSpec{
		Name:        "get_weather",
		Description: "Get the current weather for a city.",
		Schema:      json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"City name"},"unit":{"type":"string","enum":["c","f"]}},"required":["city"],"additionalProperties":false}`),
	}
}

// Call IDs used by ToolConversation.
const (
	CallParis  = "call_paris"
	CallLondon = "call_london"
)

// ToolConversation is a conversation whose last assistant message made two
// tool calls: the first was answered, the second denied (an error result).
// The results arrive as two consecutive tool messages.
func ToolConversation() []conversation.Message {
	return []conversation.Message{
		{Role: conversation.User, Content: []conversation.Content{{Type: conversation.Text, Text: "Weather in Paris and London?"}}},
		{Role: conversation.Assistant, Content: []conversation.Content{
			{Type: conversation.Reasoning, Text: "I should look both up.", Signature: "sig-abc"},
			{Type: conversation.Text, Text: "Checking both."},
			{Type: conversation.ToolCall, ToolCallID: CallParis, ToolName: "get_weather", Input: json.RawMessage(`{"city":"Paris"}`)},
			{Type: conversation.ToolCall, ToolCallID: CallLondon, ToolName: "get_weather", Input: json.RawMessage(`{"city":"London"}`)},
		}},
		{Role: conversation.ToolRole, Content: []conversation.Content{
			{Type: conversation.ToolResult, ToolCallID: CallParis, ToolName: "get_weather", Output: json.RawMessage(`{"temp_c":18,"sky":"clear"}`)},
		}},
		{Role: conversation.ToolRole, Content: []conversation.Content{
			{Type: conversation.ToolResult, ToolCallID: CallLondon, ToolName: "get_weather", Output: json.RawMessage(`"denied: the operator rejected this call"`), IsError: true},
		}},
	}
}

// UserText is a one-message conversation.
func UserText(text string) []conversation.Message {
	return []conversation.Message{{Role: conversation.User, Content: []conversation.Content{{Type: conversation.Text, Text: text}}}}
}
