package dev

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/devserver"
	"github.com/baton-run/baton/internal/mcpserve/sdkserve"
)

// Options configure the dev server.
type Options struct {
	// Addr is the operator API's address; default 127.0.0.1:8080.
	Addr string
	// AgentFile is an agent file whose agents run besides the program's.
	AgentFile string
	// Tick is how often the tick runs; default 10s.
	Tick time.Duration
	// DataDir is shown in the how-to: where the emulator keeps its data.
	// The emulator reads KUMO_DATA_DIR when the process starts, so Run
	// cannot move it: empty means KUMO_DATA_DIR's value, and when that is
	// unset too the data is in memory and the how-to says so (baton dev
	// re-executes itself with KUMO_DATA_DIR=.baton/data to keep it).
	DataDir string
	// Out receives the how-to (the banner: API, data, agents and a first
	// session's curl commands for the program's own agent); nil means
	// os.Stdout, io.Discard silences it.
	Out io.Writer
	// Ready, when set, receives the API's base URL once it listens.
	Ready func(url string)
	// Log receives the server's logs; nil writes text to stderr.
	Log *slog.Logger
}

// Run serves c's agents until ctx is done. The operator API's caller is
// the X-Baton-Operator header, else "local". It builds the App with
// the host.Config, on the environment template.yaml gives the functions, and
// runs the parts the functions run.
func Run(ctx context.Context, c host.Config, o Options) error {
	log := o.Log
	if log == nil {
		log = app.Logger("text", os.Stderr)
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}

	if c.MCPServer == nil {
		// The dev server serves the agents at /mcp, as the operator does.
		c.MCPServer = sdkserve.New
	}
	err := devserver.Run(ctx, devserver.Options{
		Addr: o.Addr, DataDir: o.DataDir, Agents: o.AgentFile, Tick: o.Tick, Out: o.Out, Ready: o.Ready,
		Template: baton.Template(),
		Build: func(ctx context.Context, vars map[string]string, cfg aws.Config, log *slog.Logger) (devserver.App, error) {
			r, err := app.FromVars(vars)
			if err != nil {
				return nil, err
			}
			return app.NewOn(ctx, c, r, cfg, log)
		},
	}, log)
	if err != nil {
		return fmt.Errorf("baton dev: %w", err)
	}
	return nil
}
