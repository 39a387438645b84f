package replay

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/apikey"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/pkg/turn"
)

// Agents builds the agents a replay runs against, as the functions build
// them: c's Go agents and, when file is set, the agent file's (a path, as
// `baton dev --agents` and a deploy read it), which may name c's tools.
// With neither, the embedded demo agent. No model is made and no key
// read: a replay's model is the recording, so an agent of any provider
// builds without its key, and the environment is not read. No AWS client
// is made either.
func Agents(ctx context.Context, c app.Config, file string) (turn.AgentMap, error) {
	clients := &awsenv.Clients{}
	if file == "" {
		out, err := app.LoadAgentsWith(ctx, "", clients, c)
		if err != nil {
			return nil, fmt.Errorf("replay: agents: %w", err)
		}
		return out, nil
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, fmt.Errorf("replay: agents %s: %w", file, err)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("replay: agents: %w", err)
	}
	f, err := agents.Parse(filepath.Base(abs), data)
	if err != nil {
		return nil, fmt.Errorf("replay: agents: %w", err)
	}
	deps := app.Deps(clients, nil, c.Lambda)
	deps.Tools, deps.MCP = c.Tools, c.MCP
	deps.Keys = apikey.NewCache(noKeys{})
	// The environment is not read: no key is needed. A provider's secret
	// reference (BATON_<PROVIDER>_KEY_SECRET) is none, and any other
	// variable (an apiKeyEnv, an MCP header's) is set, never used.
	deps.Getenv = func(name string) string {
		if strings.HasSuffix(name, "_KEY_SECRET") {
			return ""
		}
		return "replay"
	}
	for _, a := range f.Agents {
		if a.Provider != "" && a.Provider != "scripted" {
			deps.Providers[a.Provider] = func(context.Context, agents.Config, string) (model.Model, error) { return none{}, nil }
		}
	}
	built, err := agents.Build(ctx, os.DirFS(filepath.Dir(abs)), filepath.Base(abs), f, deps)
	if err != nil {
		return nil, fmt.Errorf("replay: agents: %w", err)
	}
	list := make([]*turn.Agent, 0, len(built))
	for _, a := range built {
		list = append(list, a)
	}
	// c's Go agents join the file's, linked with them.
	out, err := app.LoadAgentsWith(ctx, "", clients, app.WithAgents(c, list...))
	if err != nil {
		return nil, fmt.Errorf("replay: agents: %w", err)
	}
	return out, nil
}

// none is the model of a replayed agent until the replay puts the
// recording in its place; it never answers.
type none struct{}

func (none) Stream(context.Context, model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		yield(model.Event{}, errors.New("replay: an agent's own model is not called in a replay"))
	}
}

// noKeys is the key store of a replay: its models are never called.
type noKeys struct{}

func (noKeys) Fetch(context.Context, apikey.Ref) (string, error) {
	return "", errors.New("replay: no key is fetched in a replay")
}
