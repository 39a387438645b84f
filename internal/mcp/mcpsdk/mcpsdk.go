package mcpsdk

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/baton-run/baton/internal/mcp"
	"github.com/baton-run/baton/internal/tool"
)

// Dialer connects to MCP servers over streamable HTTP with the official
// MCP Go SDK; it is an mcp.Dialer. The zero value uses
// http.DefaultTransport and os.Getenv.
type Dialer struct {
	// HTTPClient carries the requests; nil means a client on
	// http.DefaultTransport. Its Transport is wrapped to add the headers.
	HTTPClient *http.Client
	// Getenv reads header values; nil means os.Getenv.
	Getenv func(string) string
	// Log receives the client's logs (baton's and the SDK's); nil
	// discards them. The app sets its own logger on a Dialer that has none
	// (mcp.WithLog).
	Log *slog.Logger
}

// WithLog returns d logging to log, unless d has a Log already.
func (d Dialer) WithLog(log *slog.Logger) mcp.Dialer {
	if d.Log == nil {
		d.Log = log
	}
	return d
}

func (d Dialer) log() *slog.Logger {
	if d.Log != nil {
		return d.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Tools lists the server's allowed tools and adapts each one to a
// tool.Tool, in the order of the allow list: Dialer.List, then
// Dialer.Adapt. See Rules for how annotations map onto baton's rules. A
// tool without annotations is thus a destructive side effect. Each call
// connects afresh within the caller's deadline and the server's timeout,
// so a call to a server that is down ends in an error the model sees,
// never a hang. Tools fails as List does.
func (d Dialer) Tools(ctx context.Context, s mcp.Server) ([]tool.Tool, error) {
	ls, err := d.List(ctx, s)
	if err != nil {
		return nil, err
	}
	return d.Adapt(s, ls, nil), nil
}

// List lists the allowed tools the server lists now, in the order of the
// allow list, with the rules their annotations imply (see Rules). An
// allowed tool the server does not list is left out (mcp.Toolset.List
// then refuses the listing with an *mcp.UnlistedError). A server that
// cannot be listed is logged. List
// fails with a *ConfigError when the server's configuration is bad or a
// header's environment variable is empty, and with an error wrapping
// tool.ErrUnavailable when the server cannot be reached or listed within
// ctx and the server's timeout.
func (d Dialer) List(ctx context.Context, s mcp.Server) ([]tool.Listed, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	c, err := d.conn(s, d.log())
	if err != nil {
		return nil, err
	}
	listed := map[string]*sdk.Tool{}
	err = c.session(ctx, func(ctx context.Context, cs *sdk.ClientSession) error {
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			listed[t.Name] = t
		}
		return nil
	})
	if err != nil {
		d.log().WarnContext(ctx, "mcp server cannot be listed", "server", s.Name, "url", s.URL, "err", err)
		return nil, fmt.Errorf("mcp server %q: list tools: %w (%w)", s.Name, tool.ErrUnavailable, err)
	}
	out := make([]tool.Listed, 0, len(s.Allow))
	for _, name := range s.Allow {
		t, ok := listed[name]
		if !ok {
			// Not offered; mcp.Toolset.List fails the listing, naming it.
			continue
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("mcp server %q: tool %q: input schema: %w", s.Name, t.Name, err)
		}
		if string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		effect, idempotent, destructive := Rules(t.Annotations)
		out = append(out, tool.Listed{Source: s.Name, Name: t.Name, Description: t.Description, Schema: schema,
			Effect: effect, Idempotent: idempotent, Approval: destructive})
	}
	return out, nil
}

// Adapt makes listed tools of the server callable. Each call goes to the
// server by name on a fresh session, so a tool the server no longer has,
// or a server that is down, ends in an error the model sees. A listed tool
// the allow list no longer names, or from another server, is refused at
// call time. approvals replace the approval rule of the named tools; any
// other listed with Approval needs approval for every call.
func (d Dialer) Adapt(s mcp.Server, listed []tool.Listed, approvals map[string]tool.Rule) []tool.Tool {
	c, cerr := d.conn(s, d.log())
	out := make([]tool.Tool, 0, len(listed))
	for _, l := range listed {
		t := mcp.Tool(l, approvals)
		switch {
		case l.Source != s.Name:
			t.Run = mcp.Refuse(fmt.Errorf("tool %s belongs to mcp server %q, not %q", l.Name, l.Source, s.Name))
		case !slices.Contains(s.Allow, l.Name):
			t.Run = mcp.Refuse(fmt.Errorf("mcp server %q: tool %s is no longer allowed", s.Name, l.Name))
		case cerr != nil:
			t.Run = mcp.Refuse(cerr)
		default:
			t.Run = c.call
		}
		out = append(out, t)
	}
	return out
}

// conn reads the server's header values and makes its connection.
func (d Dialer) conn(s mcp.Server, log *slog.Logger) (*conn, error) {
	headers, err := s.Headers(d.Getenv)
	if err != nil {
		return nil, err
	}
	return &conn{server: s, base: d.HTTPClient, headers: headers, log: log}, nil
}

// conn reaches one server.
type conn struct {
	server  mcp.Server
	base    *http.Client // nil for a default client
	headers http.Header
	log     *slog.Logger // the SDK client's
}

// client returns an HTTP client that adds the server's headers and ends
// every request, including the SDK's clean-up requests, once bound is done.
func (c *conn) client(bound context.Context) *http.Client {
	hc := http.Client{}
	if c.base != nil {
		hc = *c.base
	}
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	hc.Transport = transport{base: rt, headers: c.headers, bound: bound}
	return &hc
}

// transport adds fixed headers to every request and cancels it when
// bound is done.
type transport struct {
	base    http.RoundTripper
	headers http.Header
	bound   context.Context
}

func (t transport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(t.bound, cancel)
	done := func() {
		stop()
		cancel()
	}
	r = r.Clone(ctx)
	for h, vs := range t.headers {
		r.Header[h] = vs
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		done()
		return nil, err
	}
	resp.Body = &body{ReadCloser: resp.Body, done: done}
	return resp, nil
}

// body releases its request's context when closed.
type body struct {
	io.ReadCloser
	done func()
}

func (b *body) Close() error {
	err := b.ReadCloser.Close()
	b.done()
	return err
}

// session runs f on a fresh session, bounded by the server's timeout, and
// closes the session. Nothing it starts outlives ctx.
func (c *conn) session(ctx context.Context, f func(context.Context, *sdk.ClientSession) error) error {
	ctx, cancel := context.WithTimeout(ctx, c.server.RequestTimeout())
	defer cancel()
	cl := sdk.NewClient(&sdk.Implementation{Name: "baton", Version: "v1"}, &sdk.ClientOptions{Logger: c.log})
	cs, err := cl.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint:             c.server.URL,
		HTTPClient:           c.client(ctx),
		MaxRetries:           -1,
		DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", c.server.URL, err)
	}
	defer cs.Close()
	return f(ctx, cs)
}

// Rules maps a tool's MCP annotations onto baton's: its effect, whether it
// is idempotent, and whether it is destructive (then every call needs
// approval unless the agent says otherwise). Nil annotations take MCP's
// defaults: not read-only, destructive, not idempotent.
func Rules(a *sdk.ToolAnnotations) (effect tool.Effect, idempotent, destructive bool) {
	if a == nil {
		return tool.External, false, true
	}
	if a.ReadOnlyHint {
		return tool.Read, true, false
	}
	return tool.External, a.IdempotentHint, a.DestructiveHint == nil || *a.DestructiveHint
}

// call runs one tool call on a fresh session. A protocol error, an
// unreachable server or a result the server marks as an error all come
// back as an error, which the model sees as the tool's error result.
func (c *conn) call(ctx context.Context, call tool.Call) (json.RawMessage, error) {
	var args map[string]any
	if len(call.Input) > 0 {
		if err := json.Unmarshal(call.Input, &args); err != nil {
			return nil, fmt.Errorf("mcp tool %s: input: %w", call.Name, err)
		}
	}
	var res *sdk.CallToolResult
	err := c.session(ctx, func(ctx context.Context, cs *sdk.ClientSession) error {
		p := &sdk.CallToolParams{Name: call.Name, Arguments: args}
		if call.IdempotencyKey != "" {
			p.Meta = sdk.Meta{mcp.IdempotencyKeyMeta: call.IdempotencyKey}
		}
		var err error
		res, err = cs.CallTool(ctx, p)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("mcp server %q: tool %s: %w", c.server.Name, call.Name, err)
	}
	if res.IsError {
		return nil, fmt.Errorf("mcp server %q: tool %s failed: %s", c.server.Name, call.Name, text(res.Content))
	}
	if res.StructuredContent != nil {
		return json.Marshal(res.StructuredContent)
	}
	if s, ok := onlyText(res.Content); ok {
		if json.Valid([]byte(s)) {
			return json.RawMessage(s), nil
		}
		return json.Marshal(s)
	}
	return json.Marshal(res.Content)
}

// onlyText joins the content when it is all text.
func onlyText(cs []sdk.Content) (string, bool) {
	var parts []string
	for _, c := range cs {
		t, ok := c.(*sdk.TextContent)
		if !ok {
			return "", false
		}
		parts = append(parts, t.Text)
	}
	return strings.Join(parts, "\n"), true
}

// text renders content for an error message.
func text(cs []sdk.Content) string {
	if s, ok := onlyText(cs); ok {
		return s
	}
	b, err := json.Marshal(cs)
	if err != nil {
		return "(unreadable content)"
	}
	return string(b)
}

var _ mcp.Dialer = Dialer{}
