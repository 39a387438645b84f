package agentspec

import (
	"errors"
	"fmt"
	"github.com/baton-run/baton/internal/guard"
	"maps"
	"slices"

	"github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/mcp"
	"github.com/baton-run/baton/internal/tool"
)

// Check is the one check of a Go agent: the fields an agent file's agents
// share with it (CheckShared, CheckTool, Assemble), and those only Go sets.
// It calls bad with the field at fault and why, for each problem, and
// returns the agent's tools: its own and, reached through d, its MCP
// servers' (not reached here). When bad was called, they are not to be
// used.
func Check(s baton.Agent, d mcp.Dialer, bad func(field string, err error)) (*tool.Registry, tool.Source) {
	if s.Name == "" {
		bad("name", errors.New("missing"))
	}
	if s.Model == nil {
		bad("model", errors.New("missing"))
	}
	shared := Shared{System: s.System, MaxOutputTokens: s.MaxOutputTokens, MaxToolOutput: s.MaxToolOutput, Children: s.Children,
		Limits: s.Limits, Steering: s.Steering, OnChange: s.OnChange}
	if s.Compaction != nil {
		shared.CompactionPrompt = s.Compaction.Prompt
	}
	CheckShared(shared, bad)
	if err := s.Files.Check(); err != nil {
		bad("files", err)
	}
	if p := s.Price; p != nil && (p.InputPerMTok < 0 || p.OutputPerMTok < 0) {
		bad("price", errors.New("negative"))
	}
	if c := s.Compaction; c != nil {
		switch {
		case c.InputTokens <= 0:
			bad("compaction.InputTokens", errors.New("must be a positive number of tokens"))
		case c.MaxTokens < 0:
			bad("compaction.MaxTokens", errors.New("negative"))
		case c.KeepTurns < -1 || c.KeepSteps < -1:
			bad("compaction.KeepTurns", errors.New("KeepTurns and KeepSteps must be -1 (keep none) or more"))
		case c.Price != nil && (c.Price.InputPerMTok < 0 || c.Price.OutputPerMTok < 0):
			bad("compaction.Price", errors.New("negative"))
		}
	}
	if err := guard.Validate(s.Guardrails); err != nil {
		bad("guardrails", err)
	}
	var local []Local
	for i, t := range s.Tools {
		field := fmt.Sprintf("tools[%d]", i)
		if t.Err != nil {
			bad(field, fmt.Errorf("tool %q: %w", t.Name, t.Err))
			continue
		}
		if sub, err := CheckTool(t, s.Limits); err != nil {
			bad(field+"."+sub, fmt.Errorf("tool %q: %w", t.Name, err))
			continue
		}
		local = append(local, Local{Field: field, Tool: t})
	}
	servers := make([]Remote, len(s.MCP))
	for i, m := range s.MCP {
		servers[i] = Remote{Field: fmt.Sprintf("mcp[%d]", i), Server: Server(m)}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Approvals)) {
		if err := s.Approvals[name].Validate(); err != nil {
			bad("approvals."+name, err)
		}
	}
	return Assemble(local, servers, s.Approvals, d, nil, bad)
}

// Server is a Go agent's MCP server as package mcp reaches it.
func Server(s baton.MCPServer) mcp.Server {
	out := mcp.Server{Name: s.Name, URL: s.URL, HeaderEnv: s.HeaderEnv, Allow: s.Allow, Timeout: s.Timeout}
	if s.Claims != nil {
		out.Claims = make(map[string][]claims.Static, len(s.Claims))
		for name, decls := range s.Claims {
			static := make([]claims.Static, len(decls))
			for i, d := range decls {
				static[i] = claims.Static(d)
			}
			out.Claims[name] = static
		}
	}
	return out
}
