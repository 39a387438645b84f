package replay

import (
	"context"
	"fmt"

	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/pkg/turn"
)

// Agents builds the agents a replay runs against, as the functions build
// them: c's Go agents and, when file is set, the agent file's (a path, as
// `baton dev --agents` and a deploy read it), which may name c's tools. No
// AWS client is made: a replay's models and tools are the recording's.
func Agents(ctx context.Context, c app.Config, file string) (turn.AgentMap, error) {
	agents, err := app.LoadAgentsWith(ctx, file, &awsenv.Clients{}, c)
	if err != nil {
		return nil, fmt.Errorf("replay: agents: %w", err)
	}
	return agents, nil
}
