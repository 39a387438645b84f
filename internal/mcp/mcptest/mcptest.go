package mcptest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The server's tools.
const (
	// Lookup is read-only: it returns a file's size.
	Lookup = "lookup"
	// Delete is destructive: it deletes a file.
	Delete = "delete_file"
	// SetFlag is idempotent and not destructive: it sets a named flag.
	SetFlag = "set_flag"
	// Hidden is offered by the server but meant to stay off every allow list.
	Hidden = "hidden"
)

// Call is one tool call that reached the server.
type Call struct {
	Tool string
	// Args are the call's arguments as the server decoded them.
	Args map[string]any
	// Header is the HTTP header of the request that carried the call.
	Header http.Header
	// Meta is the call's _meta.
	Meta map[string]any
}

// Server is a running MCP server.
type Server struct {
	// URL is the streamable HTTP endpoint.
	URL  string
	http *httptest.Server
	mcp  *sdk.Server
	mu   sync.Mutex
	// calls in arrival order
	calls []Call
	down  bool
}

// Start starts a server on a local port; Close stops it.
func Start() *Server {
	s := &Server{}
	m := sdk.NewServer(&sdk.Implementation{Name: "mcptest", Version: "v1"}, nil)
	yes, no := true, false
	type path struct {
		Path string `json:"path" jsonschema:"the file's path"`
	}
	type flag struct {
		Name  string `json:"name"`
		Value bool   `json:"value"`
	}
	sdk.AddTool(m, &sdk.Tool{Name: Lookup, Description: "Look up a file's size.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, r *sdk.CallToolRequest, in path) (*sdk.CallToolResult, map[string]any, error) {
			s.record(Lookup, r, map[string]any{"path": in.Path})
			return nil, map[string]any{"path": in.Path, "bytes": len(in.Path) * 100}, nil
		})
	sdk.AddTool(m, &sdk.Tool{Name: Delete, Description: "Delete a file.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: &yes}},
		func(_ context.Context, r *sdk.CallToolRequest, in path) (*sdk.CallToolResult, any, error) {
			s.record(Delete, r, map[string]any{"path": in.Path})
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "deleted " + in.Path}}}, nil, nil
		})
	sdk.AddTool(m, &sdk.Tool{Name: SetFlag, Description: "Set a flag.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: &no, IdempotentHint: true}},
		func(_ context.Context, r *sdk.CallToolRequest, in flag) (*sdk.CallToolResult, map[string]any, error) {
			s.record(SetFlag, r, map[string]any{"name": in.Name, "value": in.Value})
			if in.Name == "broken" {
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "flag broken is read-only"}}}, nil, nil
			}
			return nil, map[string]any{"name": in.Name, "value": in.Value}, nil
		})
	sdk.AddTool(m, &sdk.Tool{Name: Hidden, Description: "Not for agents.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, r *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			s.record(Hidden, r, nil)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "secret"}}}, nil, nil
		})
	s.mcp = m
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return m }, &sdk.StreamableHTTPOptions{JSONResponse: true})
	s.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		down := s.down
		s.mu.Unlock()
		if down {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	s.URL = s.http.URL
	return s
}

func (s *Server) record(name string, r *sdk.CallToolRequest, args map[string]any) {
	c := Call{Tool: name, Args: args}
	if r.Extra != nil {
		c.Header = r.Extra.Header.Clone()
	}
	if r.Params != nil {
		c.Meta = r.Params.GetMeta()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
}

// Remove stops offering the named tools.
func (s *Server) Remove(names ...string) { s.mcp.RemoveTools(names...) }

// Add offers t, replacing a tool of the same name. A call to it is
// recorded and answers "ok".
func (s *Server) Add(t *sdk.Tool) {
	s.mcp.AddTool(t, func(_ context.Context, r *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		s.record(t.Name, r, nil)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
	})
}

// SetDown makes the server answer every request with HTTP 503 (true), or
// serve again (false).
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// Calls returns the tool calls that reached the server, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Close stops the server and waits for its requests to end.
func (s *Server) Close() {
	s.http.CloseClientConnections()
	s.http.Close()
}

// String names the server for test logs.
func (s *Server) String() string { return fmt.Sprintf("mcptest server at %s", s.URL) }
