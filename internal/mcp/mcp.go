package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/tool"
)

// DefaultTimeout bounds one request to a server (listing its tools, or one
// call) when Server.Timeout is zero. The caller's deadline, when sooner,
// wins.
const DefaultTimeout = 30 * time.Second

// IdempotencyKeyMeta is the _meta key under which every call carries its
// idempotency key, the same for every run of one tool call, so a server
// that honours it applies a side effect once.
const IdempotencyKeyMeta = "baton.run/idempotencyKey"

// Server is a remote MCP server an agent may use.
type Server struct {
	// Name identifies the server in errors and logs.
	Name string
	// URL is the server's streamable HTTP endpoint (http or https).
	URL string
	// HeaderEnv maps an HTTP header to the environment variable holding its
	// value, such as "Authorization" to "GITHUB_MCP_TOKEN". Values are read
	// when the tools are listed; an unset or empty variable is an error.
	HeaderEnv map[string]string
	// Allow names the server's tools the agent may call; the server's other
	// tools are never offered to the model. It must not be empty, and every
	// name must be one the server lists: a turn whose server does not list
	// one fails at its start, naming it (UnlistedError).
	Allow []string
	// Timeout bounds each request to the server; zero means DefaultTimeout.
	Timeout time.Duration
	// Claims are, by allowed tool, the resource claims a call needs (see
	// package claims: each keyed by a top-level string field of the
	// input), asked of the broker before the call runs, as for any tool
	// that declares claims. Only a side effect claims: a tool the server
	// marks read-only fails the turn's start.
	Claims map[string][]claims.Static
}

// ConfigError is a server configuration that cannot be used. Field names
// the part at fault: name, url, allow, headerEnv.<header> or timeout.
type ConfigError struct {
	Server, Field string
	Err           error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("mcp server %q: %s: %v", e.Server, e.Field, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// Check reports what is wrong with the server's configuration, as a
// *ConfigError: a missing name, a URL that is not absolute http or https,
// an empty allow list or an empty or repeated entry in it, a bad header
// name or one with no variable, a negative timeout.
func (s Server) Check() error {
	bad := func(field string, format string, args ...any) error {
		return &ConfigError{Server: s.Name, Field: field, Err: fmt.Errorf(format, args...)}
	}
	if s.Name == "" {
		return bad("name", "missing")
	}
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return bad("url", "%q: want an absolute http or https URL", s.URL)
	}
	if len(s.Allow) == 0 {
		return bad("allow", "lists no tools: name the tools the agent may call")
	}
	seen := map[string]bool{}
	for _, n := range s.Allow {
		if n == "" || seen[n] {
			return bad("allow", "%q is empty or repeated", n)
		}
		seen[n] = true
	}
	for _, h := range slices.Sorted(maps.Keys(s.HeaderEnv)) {
		if h == "" || strings.ContainsAny(h, " :\r\n\t") {
			return bad("headerEnv."+h, "not a valid header name")
		}
		if s.HeaderEnv[h] == "" {
			return bad("headerEnv."+h, "names no environment variable")
		}
	}
	for _, n := range slices.Sorted(maps.Keys(s.Claims)) {
		if !seen[n] {
			return bad("claims."+n, "names a tool the allow list does not")
		}
		if err := claims.CheckStatic(s.Claims[n]); err != nil {
			return bad("claims."+n, "%w", err)
		}
	}
	if s.Timeout < 0 {
		return bad("timeout", "negative")
	}
	return nil
}

// RequestTimeout is the bound of one request to the server: Timeout, or
// DefaultTimeout when that is zero.
func (s Server) RequestTimeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return DefaultTimeout
}

// Headers reads the server's header values with getenv (nil means
// os.Getenv); an unset or empty variable is a *ConfigError.
func (s Server) Headers(getenv func(string) string) (http.Header, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	headers := http.Header{}
	for _, h := range slices.Sorted(maps.Keys(s.HeaderEnv)) {
		env := s.HeaderEnv[h]
		v := getenv(env)
		if v == "" {
			return nil, &ConfigError{Server: s.Name, Field: "headerEnv." + h, Err: fmt.Errorf("environment variable %s is empty", env)}
		}
		headers.Set(h, v)
	}
	return headers, nil
}

// Dialer reaches MCP servers: it lists a server's allowed tools and makes
// a listing callable. This package holds no client, so a program that
// reaches no server links no MCP SDK; package
// github.com/baton-run/baton/internal/mcp/mcpsdk has baton's, on the official
// MCP Go SDK, and a program registers it (host.Config.MCP).
type Dialer interface {
	// List lists the allowed tools the server lists now, in the order of
	// the allow list, with the rules their annotations imply. It fails
	// with a *ConfigError when the configuration is bad or a header's
	// variable is empty, and with an error wrapping tool.ErrUnavailable
	// when the server cannot be reached or listed.
	List(ctx context.Context, s Server) ([]tool.Listed, error)
	// Adapt makes listed tools of the server callable (see Tool for their
	// rules). A listed tool of another server, or one the allow list no
	// longer names, is refused at call time.
	Adapt(s Server, listed []tool.Listed, approvals map[string]tool.Rule) []tool.Tool
}

// WithLog gives d the app's logger, when d takes one (it has a method
// WithLog(*slog.Logger) Dialer, as package mcpsdk's Dialer has) and has
// none of its own: the app calls it with its logger, so that a program's
// MCP client logs where the app does.
func WithLog(d Dialer, log *slog.Logger) Dialer {
	if l, ok := d.(interface{ WithLog(*slog.Logger) Dialer }); ok && log != nil {
		return l.WithLog(log)
	}
	return d
}

// NoDialerError is the error of listing or calling MCP tools in a program
// that registered no Dialer.
type NoDialerError struct{ Server string }

func (e *NoDialerError) Error() string {
	return fmt.Sprintf("mcp server %q: this program registers no MCP client: set host.Config.MCP (providers.MCP() registers baton's)", e.Server)
}

// Tool is a listed tool with its rules and no Run: approvals replace the
// approval rule of the named tools; any other listed with Approval needs
// approval for every call. A Dialer's Adapt sets Run.
func Tool(l tool.Listed, approvals map[string]tool.Rule) tool.Tool {
	t := tool.Tool{Name: l.Name, Description: l.Description, Schema: l.Schema, Effect: l.Effect, Idempotent: l.Idempotent}
	if rule, ok := approvals[l.Name]; ok {
		t.NeedsApproval = rule.Needs
	} else if l.Approval {
		t.NeedsApproval = tool.Always
	}
	return t
}

// Refuse is a tool's Run that fails every call with err, which the model
// sees.
func Refuse(err error) func(context.Context, tool.Call) (json.RawMessage, error) {
	return func(context.Context, tool.Call) (json.RawMessage, error) { return nil, err }
}
