package main

import (
	"context"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/internal/cli"
	"github.com/baton-run/baton/internal/replay"
	"github.com/baton-run/baton/internal/replay/report"
	"github.com/baton-run/baton/providers"
)

// replayEngine is `baton replay`'s engine: the agent file's agents built as
// the dev server builds them (the demo tools; any provider, whose model the
// recording replaces), the export replayed against them in memory.
func replayEngine(ctx context.Context, r cli.ReplayRequest) (report.Report, error) {
	cfg := host.Config{Tools: baton.DemoTools(), MCP: providers.MCP(), Lambda: providers.Lambda()}
	agents, err := replay.Agents(ctx, cfg, r.Agents)
	if err != nil {
		return report.Report{}, err
	}
	return replay.Run(ctx, r.Export, agents, replay.Options{RunReads: r.RunReads})
}
