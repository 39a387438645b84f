package agents

import (
	"fmt"

	"github.com/baton-run/baton/pkg/turn"
)

// children is the sub-agents part of an agent's config (turn.Children):
// whether the file's agents it names exist is checked once all agents are
// known, with the program's Go agents (turn.AgentMap.Link); its limits
// with the rest of what Go agents share (agentspec.CheckShared).
func children(c Config) (turn.Children, error) {
	k := turn.Children{Agents: c.Agents, Handoffs: c.Handoffs, MaxDepth: c.MaxDepth, MaxChildren: c.MaxChildren}
	switch c.Children {
	case "", "all":
	case "each":
		k.Each = true
	default:
		return k, fmt.Errorf("%q: want all or each", c.Children)
	}
	return k, nil
}
