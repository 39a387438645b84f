package agentspec

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/baton-run/baton/internal/mcp"
	"github.com/baton-run/baton/internal/tool"
)

// Local is one of an agent's own tools and where it is configured
// ("tools[2]").
type Local struct {
	Field string
	Tool  tool.Tool
}

// Remote is one of an agent's MCP servers and where it is configured
// ("mcp[0]").
type Remote struct {
	Field  string
	Server mcp.Server
}

// Assemble makes an agent's tools, the same way for agent files and Go
// agents: each local tool and each allowed tool of its MCP servers once,
// each named as every provider takes a tool's name (tool.CheckName), with
// the agent's approvals replacing their rules, and every approval naming a
// tool the agent has. A local tool's claims and approval rules (its own
// and the agent's) must name fields its input schema has (checkFields);
// an MCP tool's schema is not known until a turn lists it. The servers are not reached; a turn lists
// their tools when it starts (remote is nil without servers). Each problem
// goes to bad with its field; the results are then not to be used.
// dialer reaches the servers (nil fails their listing, mcp.NoDialerError)
// and getenv checks their header values (nil means os.Getenv).
func Assemble(local []Local, servers []Remote, approvals map[string]tool.Rule, dialer mcp.Dialer, getenv func(string) string,
	bad func(field string, err error)) (reg *tool.Registry, remote tool.Source) {
	var tools []tool.Tool
	seen := map[string]bool{}
	for _, l := range local {
		t := l.Tool
		if err := tool.CheckName(t.Name); err != nil {
			bad(l.Field+".name", fmt.Errorf("tool %q: %w", t.Name, err))
			continue
		}
		if seen[t.Name] {
			bad(l.Field, fmt.Errorf("tool %q listed twice", t.Name))
			continue
		}
		seen[t.Name] = true
		var agentRule *tool.Rule
		if r, ok := approvals[t.Name]; ok {
			t.NeedsApproval, agentRule = r.Needs, &r
		}
		checkFields(l.Field, t, agentRule, bad)
		tools = append(tools, t)
	}
	var ts *mcp.Toolset
	if len(servers) > 0 {
		ts = &mcp.Toolset{Dialer: dialer, Getenv: getenv, Approvals: map[string]tool.Rule{}}
	}
	for _, s := range servers {
		one := mcp.Toolset{Dialer: dialer, Getenv: getenv, Servers: append(slices.Clone(ts.Servers), s.Server)}
		if err := one.Check(); err != nil {
			var ce *mcp.ConfigError
			if errors.As(err, &ce) {
				bad(s.Field+"."+ce.Field, ce.Err)
			} else {
				bad(s.Field, err)
			}
			continue
		}
		clash := false
		for _, name := range s.Server.Allow {
			if err := tool.CheckName(name); err != nil {
				bad(s.Field+".allow", fmt.Errorf("tool %q: %w", name, err))
				clash = true
			} else if seen[name] {
				bad(s.Field+".allow", fmt.Errorf("tool %q: the agent already has a tool of that name", name))
				clash = true
			}
		}
		if clash {
			continue
		}
		for _, name := range s.Server.Allow {
			seen[name] = true
			if r, ok := approvals[name]; ok {
				ts.Approvals[name] = r
			}
		}
		ts.Servers = append(ts.Servers, s.Server)
	}
	for _, name := range slices.Sorted(maps.Keys(approvals)) {
		if !seen[name] {
			bad("approvals."+name, errors.New("names a tool the agent does not have"))
		}
	}
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		bad("tools", err)
	}
	if ts != nil {
		remote = *ts
	}
	return reg, remote
}
