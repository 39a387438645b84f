package mcp

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/tool"
)

// Toolset is the MCP servers of one agent as a tool.Source: a turn lists
// their allowed tools when it starts, and calls the tools it recorded by
// name on their servers.
type Toolset struct {
	// Dialer reaches the servers; nil (a program that registers no MCP
	// client, such as the operator or the tick) fails every listing and
	// call with a *NoDialerError.
	Dialer Dialer
	// Getenv reads header values for Check; nil means os.Getenv.
	Getenv  func(string) string
	Servers []Server
	// Approvals replace the approval rule of the named tools. They are
	// tool.Rules, which fail closed on input they cannot read, so a loose
	// schema does not let a call past its rule.
	Approvals map[string]tool.Rule
}

// Check reports what can be known wrong without reaching the servers, as a
// *ConfigError: a server's configuration (Server.Check), a header whose
// environment variable is empty, or a server name or allowed tool name
// used twice.
func (ts Toolset) Check() error {
	servers, tools := map[string]bool{}, map[string]string{}
	for _, s := range ts.Servers {
		if err := s.Check(); err != nil {
			return err
		}
		if servers[s.Name] {
			return &ConfigError{Server: s.Name, Field: "name", Err: fmt.Errorf("another server has that name")}
		}
		servers[s.Name] = true
		if _, err := s.Headers(ts.Getenv); err != nil {
			return err
		}
		for _, n := range s.Allow {
			if other, dup := tools[n]; dup {
				return &ConfigError{Server: s.Name, Field: "allow", Err: fmt.Errorf("tool %q: server %q allows a tool of that name too", n, other)}
			}
			tools[n] = s.Name
		}
	}
	return nil
}

// List lists every server's allowed tools, server by server, as
// Dialer.List does; the first server that fails fails the listing, and so
// does one that does not list every tool its allow list names
// (*UnlistedError).
func (ts Toolset) List(ctx context.Context) ([]tool.Listed, error) {
	var out []tool.Listed
	for _, s := range ts.Servers {
		if ts.Dialer == nil {
			return nil, &NoDialerError{Server: s.Name}
		}
		ls, err := ts.Dialer.List(ctx, s)
		if err != nil {
			return nil, err
		}
		if err := allListed(s, ls); err != nil {
			return nil, err
		}
		out = append(out, ls...)
	}
	return out, nil
}

// UnlistedError is a server that does not list tools the agent's allow
// list names. It fails the turn at its start, naming them: the agent's
// configuration and the server disagree, and no retry mends that.
type UnlistedError struct {
	Server string
	Tools  []string
}

func (e *UnlistedError) Error() string {
	return fmt.Sprintf("mcp server %q does not list the allowed %s %s: fix the agent's allow list (mcp[].allow) or the server",
		e.Server, plural(len(e.Tools), "tool", "tools"), quoted(e.Tools))
}

// allListed checks that ls holds every tool s allows.
func allListed(s Server, ls []tool.Listed) error {
	have := map[string]bool{}
	for _, l := range ls {
		if l.Source == s.Name {
			have[l.Name] = true
		}
	}
	var missing []string
	for _, n := range s.Allow {
		if !have[n] {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return &UnlistedError{Server: s.Name, Tools: missing}
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// Tools makes listed tools callable on their servers (Dialer.Adapt), in
// the order listed. A tool of a server no longer configured is refused at
// call time, and so is every tool without a Dialer.
func (ts Toolset) Tools(listed []tool.Listed) []tool.Tool {
	servers := map[string]Server{}
	for _, s := range ts.Servers {
		servers[s.Name] = s
	}
	out := make([]tool.Tool, 0, len(listed))
	for _, l := range listed {
		s, ok := servers[l.Source]
		if !ok || ts.Dialer == nil {
			t := Tool(l, ts.Approvals)
			t.Run = Refuse(fmt.Errorf("mcp server %q is no longer configured", l.Source))
			if ok {
				t.Run = Refuse(&NoDialerError{Server: l.Source})
			}
			out = append(out, t)
			continue
		}
		for _, t := range ts.Dialer.Adapt(s, []tool.Listed{l}, ts.Approvals) {
			if cs, ok := s.Claims[t.Name]; ok {
				t.Claims = claims.Of(cs...)
			}
			out = append(out, t)
		}
	}
	return out
}
