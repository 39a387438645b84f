package sdkserve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/baton-run/baton/internal/mcpserve"
)

// maxBody bounds a JSON-RPC request's body.
const maxBody = 1 << 20

// handler serves Path and the metadata.
type handler struct {
	c    mcpserve.Config
	log  *slog.Logger
	hold time.Duration
	sdk  http.Handler
	mux  *http.ServeMux
}

// New returns the handler of mcpserve.Path, MetadataPath and
// MetadataPath+Path: an mcpserve.Server.
func New(c mcpserve.Config) http.Handler {
	h := &handler{c: c, log: c.Log, hold: c.Hold}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.hold <= 0 {
		h.hold = mcpserve.DefaultHold
	}
	if h.c.Identity == nil {
		h.c.Identity = func(*http.Request) (string, bool) { return "", false }
	}
	// The SDK logs every stateless request's session at Info: only its
	// warnings and errors reach the log.
	quiet := slog.New(leveled{h.log.Handler(), slog.LevelWarn})
	// The SDK answers server/discover (its 2026 handshake): it names the
	// tasks extension there too.
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}
	caps.AddExtension(taskExtension, map[string]any{})
	srv := mcp.NewServer(&mcp.Implementation{Name: "baton", Version: "1"}, &mcp.ServerOptions{Logger: quiet, Capabilities: caps})
	for _, a := range c.Agents {
		srv.AddTool(h.tool(a), h.call(a))
	}
	h.sdk = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, Logger: quiet})
	h.mux = http.NewServeMux()
	h.mux.Handle(mcpserve.Path, h.authed(http.HandlerFunc(h.front)))
	h.mux.HandleFunc(mcpserve.MetadataPath, mcpserve.Metadata(c.Issuer))
	h.mux.HandleFunc(mcpserve.MetadataPath+mcpserve.Path, mcpserve.Metadata(c.Issuer))
	return h.mux
}

// authed answers 401, pointing to the metadata, without the caller's
// identity; with one, it passes the caller to the SDK's tool handlers as
// the request's auth.TokenInfo (its UserID).
func (h *handler) authed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, ok := h.c.Identity(r)
		if !ok || caller == "" {
			mcpserve.Challenge(w, r)
			return
		}
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			// An identity that is not a bearer token (the dev server's
			// header): the SDK's middleware needs one to carry it.
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer identity")
		}
		verified := func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
			return &auth.TokenInfo{UserID: caller, Expiration: time.Now().Add(time.Hour)}, nil
		}
		auth.RequireBearerToken(verified, nil)(next).ServeHTTP(w, r)
	})
}

// rpcRequest is one JSON-RPC request as the front reads it.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// rpcError is a JSON-RPC error.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

// JSON-RPC error codes.
const (
	codeInvalidParams  = -32602
	codeMethodNotFound = -32601
	codeInternal       = -32603
)

func invalid(format string, args ...any) *rpcError {
	return &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// front answers the methods the SDK does not implement (initialize, for
// the tasks capability; tools/list, for each tool's taskSupport; a
// tools/call made as a task; tasks/*) and hands every other message to
// the SDK's stateless handler.
func (h *handler) front(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		h.sdk.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		mcpserve.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "read the body: " + err.Error()})
		return
	}
	if len(body) > maxBody {
		mcpserve.WriteJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": fmt.Sprintf("the body is over %d bytes", maxBody)})
		return
	}
	var req rpcRequest
	if json.Unmarshal(body, &req) == nil && len(req.ID) > 0 && string(req.ID) != "null" {
		caller := auth.TokenInfoFromContext(r.Context()).UserID
		if res, rerr, mine := h.dispatch(r.Context(), caller, req); mine {
			answer(w, req.ID, res, rerr)
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	h.sdk.ServeHTTP(w, r)
}

// dispatch answers req if the front serves its method.
func (h *handler) dispatch(ctx context.Context, caller string, req rpcRequest) (any, *rpcError, bool) {
	switch req.Method {
	case "initialize":
		res, err := h.initialize(req.Params)
		return res, err, true
	case "tools/list":
		return h.list(), nil, true
	case "tools/call":
		var p callParams
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, invalid("tools/call params: %v", err), true
		}
		if !p.asTask() {
			return nil, nil, false
		}
		res, err := h.createTask(ctx, caller, p)
		return res, err, true
	case "tasks/get", "tasks/result", "tasks/cancel", "tasks/update", "tasks/list":
		res, err := h.tasks(ctx, caller, req.Method, req.Params)
		return res, err, true
	}
	return nil, nil, false
}

// answer writes one JSON-RPC response as application/json.
func answer(w http.ResponseWriter, id json.RawMessage, res any, err *rpcError) {
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if err != nil {
		msg["error"] = err
	} else {
		msg["result"] = res
	}
	mcpserve.WriteJSON(w, http.StatusOK, msg)
}

// protocolVersions are the revisions the front's initialize accepts,
// newest first.
var protocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// initialize answers the handshake with the tools and tasks capabilities
// (2025-11-25's tasks, and the tasks extension).
func (h *handler) initialize(params json.RawMessage) (any, *rpcError) {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, invalid("initialize params: %v", err)
		}
	}
	version := protocolVersions[0]
	if slices.Contains(protocolVersions, p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	return map[string]any{
		"protocolVersion": version,
		"capabilities": map[string]any{
			"tools": map[string]any{"listChanged": false},
			"tasks": map[string]any{"list": map[string]any{}, "cancel": map[string]any{},
				"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}},
			"extensions": map[string]any{taskExtension: map[string]any{}},
		},
		"serverInfo": map[string]any{"name": "baton", "version": "1"},
		"instructions": "Each tool is a baton agent: send it a message (and a session from an earlier answer to continue that conversation). " +
			"Call it as a task to follow a long turn, or one that waits for an approval: tasks/get says what it waits for, tasks/update answers it.",
	}, nil
}

// inputSchema is every agent tool's input.
var inputSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"message":{"type":"string","description":"what to ask the agent"},` +
	`"session":{"type":"string","description":"a session id from an earlier answer of this tool, to continue that conversation"}},` +
	`"required":["message"],"additionalProperties":false}`)

func (h *handler) tool(agent string) *mcp.Tool {
	desc := ""
	if h.c.Describe != nil {
		desc = h.c.Describe(agent)
	}
	if desc == "" {
		desc = fmt.Sprintf("Ask baton agent %q. Its answer is the turn's final answer; the result names the session, to continue it.", agent)
	}
	return &mcp.Tool{Name: agent, Description: desc, InputSchema: inputSchema}
}

// list answers tools/list: every agent, each a task optionally.
func (h *handler) list() any {
	tools := make([]map[string]any, 0, len(h.c.Agents))
	for _, a := range h.c.Agents {
		t := h.tool(a)
		tools = append(tools, map[string]any{"name": t.Name, "description": t.Description, "inputSchema": inputSchema,
			"execution": map[string]any{"taskSupport": "optional"}})
	}
	return map[string]any{"tools": tools}
}

// leveled passes on records at min or above.
type leveled struct {
	slog.Handler
	min slog.Level
}

func (l leveled) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= l.min && l.Handler.Enabled(ctx, level)
}

func (l leveled) WithAttrs(as []slog.Attr) slog.Handler {
	return leveled{l.Handler.WithAttrs(as), l.min}
}

func (l leveled) WithGroup(name string) slog.Handler {
	return leveled{l.Handler.WithGroup(name), l.min}
}
