package app

import (
	"net/http"
	"os"
	"time"

	"github.com/baton-run/baton/internal/mcpserve"
)

// EnvMCPAgents chooses the agents the operator function serves as MCP
// tools at /mcp: a comma-separated list of agent names, or "*" for all;
// unset or empty serves none.
const EnvMCPAgents = mcpserve.Env

// mcpAgents are the agents Resources.MCPAgents chooses; an error names
// an agent the App does not have.
func (a *App) mcpAgents() ([]string, error) {
	return mcpserve.Select(a.Resources.MCPAgents, a.AgentNames())
}

// MCP returns the MCP endpoint (/mcp and its protected-resource
// metadata) for the operator API, made by the Config's MCPServer (none:
// mcpserve.Unserved, which answers 501): the agents BATON_MCP_AGENTS chooses,
// callers named by identity, the issuer the metadata names
// (BATON_JWT_ISSUER), and hold, how long a call without a task waits for
// its turn (0: mcpserve.DefaultHold).
func (a *App) MCP(identity func(*http.Request) (string, bool), hold time.Duration) http.Handler {
	agents, err := a.mcpAgents()
	if err != nil { // New refused it already; keep serving none
		a.Log.Error("mcp: serving no agents", "err", err)
	}
	c := mcpserve.Config{Sessions: a.Sessions, Agents: agents, Identity: identity,
		Issuer: a.Resources.JWTIssuer, Hold: hold, Log: a.Log}
	if a.mcpServer == nil {
		return mcpserve.Unserved(c)
	}
	return a.mcpServer(c)
}

// SetMCPFromOS sets the dev server's BATON_MCP_AGENTS in vars from the
// process environment: every agent ("*") when it is unset, so that
// /mcp serves the local agents; a deployment serves none unless told.
func SetMCPFromOS(vars map[string]string) {
	vars[EnvMCPAgents] = "*"
	if v, ok := os.LookupEnv(EnvMCPAgents); ok {
		vars[EnvMCPAgents] = v
	}
}
