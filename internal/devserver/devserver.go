package devserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/emulator"
	"github.com/baton-run/baton/internal/mcpserve/sdkserve"
	"github.com/baton-run/baton/internal/provision"
	"github.com/baton-run/baton/internal/tick"
	"github.com/baton-run/baton/internal/worker"
	"github.com/baton-run/baton/pkg/streams"
)

// LocalOperator is the identity of callers that send no X-Baton-Operator header.
const LocalOperator = "local"

// Options configure the dev server.
type Options struct {
	Addr    string        // operator API address; default 127.0.0.1:8080
	DataDir string        // informational: where the emulator persists (KUMO_DATA_DIR); empty says in memory
	Agents  string        // agent config; empty for the embedded demo
	Tick    time.Duration // tick interval; default 10s
	Out     io.Writer     // where the how-to is printed; nil for nowhere
	// Ready, when set, receives the API's base URL once it listens.
	Ready func(url string)
	// Template is the SAM template whose resources are created. Required.
	Template []byte
	// Build makes the App on the provisioned resources: vars is the
	// environment the template gives the functions, on those resources
	// (BATON_TABLE, BATON_BUCKET, ...), and cfg reaches the emulator. Nil
	// means app.New (the agent file's agents, no Go extras).
	Build func(ctx context.Context, vars map[string]string, cfg aws.Config, log *slog.Logger) (App, error)
}

// App is what the dev server runs: the operator API, the resume worker and
// the tick of one App (*app.App and *host.App are).
type App interface {
	Operator(identity func(*http.Request) (string, bool), hold time.Duration, chatAgent string) http.Handler
	Worker() *worker.Worker
	Tick() *tick.Tick
	AgentNames() []string
}

// build is Build's default: the agent file's agents, no Go extras but
// the MCP endpoint.
func build(ctx context.Context, vars map[string]string, cfg aws.Config, log *slog.Logger) (App, error) {
	r, err := app.FromVars(vars)
	if err != nil {
		return nil, fmt.Errorf("template: %w", err) // Run prefixes "devserver: "
	}
	return app.NewWith(ctx, r, awsenv.FromConfig(cfg), log, app.Config{MCPServer: sdkserve.New})
}

// Run serves until ctx is done.
func Run(ctx context.Context, o Options, log *slog.Logger) error {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:8080"
	}
	if o.Tick <= 0 {
		o.Tick = 10 * time.Second
	}
	if len(o.Template) == 0 {
		return errors.New("devserver: no template")
	}
	if o.Build == nil {
		o.Build = build
	}
	// Progress goes out before each phase, so a slow start does not look
	// hung.
	progress := func(what string) {
		if o.Out != nil {
			fmt.Fprintf(o.Out, "baton dev: %s\n", what)
		}
	}
	progress("starting the AWS emulator")
	emu := emulator.Start()
	defer emu.Close()
	progress("creating the table, bucket and queues of template.yaml")
	res, err := provision.Provision(ctx, emu.Clients, o.Template, provision.DefaultNames())
	if err != nil {
		return fmt.Errorf("devserver: provision: %w", err)
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("devserver: listen: %w", err)
	}
	url := "http://" + ln.Addr().String()
	vars, err := functionEnv(o.Template, res, o.Agents)
	if err != nil {
		ln.Close()
		return err
	}
	// Callback tools' URLs are this server's.
	vars[app.EnvCallbackURL] = url
	progress("building the agents")
	a, err := o.Build(ctx, vars, emu.Clients.Config, log)
	if err != nil {
		ln.Close()
		return fmt.Errorf("devserver: %w", err)
	}

	api := a.Operator(operatorID, 25*time.Second, "demo")
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}

	w, t := a.Worker(), a.Tick()
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := worker.Poll(ctx, emu.Clients.SQS, res.QueueURL, w.HandleSQS, log); err != nil && ctx.Err() == nil {
			log.Error("resume poller stopped", "err", err)
		}
	})
	wg.Go(func() { ticks(ctx, t, o.Tick, log) })
	wg.Go(func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	})

	if o.Out != nil {
		fmt.Fprint(o.Out, banner(url, emu, o.DataDir, a.AgentNames()))
	}
	if o.Ready != nil {
		o.Ready(url)
	}
	err = srv.Serve(ln)
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		// Give the emulator's background snapshot a moment to land.
		time.Sleep(1200 * time.Millisecond)
		return nil
	}
	return err
}

// operatorID names the caller of the local operator API: the
// X-Baton-Operator header, or LocalOperator.
func operatorID(r *http.Request) (string, bool) {
	if id := r.Header.Get("X-Baton-Operator"); id != "" {
		return id, true
	}
	return LocalOperator, true
}

// ticks runs the tick every period until ctx ends, logging what it did.
func ticks(ctx context.Context, t *tick.Tick, period time.Duration, log *slog.Logger) {
	every := time.NewTicker(period)
	defer every.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-every.C:
			tctx, cancel := context.WithTimeout(ctx, period)
			rep, err := t.Run(tctx)
			cancel()
			if err != nil && ctx.Err() == nil {
				log.Warn("tick", "err", err)
			} else if rep.Reaped+rep.Expired+rep.Rewoken > 0 {
				log.Info("tick", "reaped", rep.Reaped, "expired", rep.Expired, "rewoken", rep.Rewoken)
			}
		}
	}
}

// functionEnv is the environment the template gives the tick function
// (all three share it), on the provisioned resources, with the dev
// server's agent file: the dev server runs what the functions run.
func functionEnv(tmpl []byte, res provision.Resources, agentFile string) (map[string]string, error) {
	fns, err := provision.FunctionEnv(tmpl)
	if err != nil {
		return nil, fmt.Errorf("devserver: template: %w", err)
	}
	vars, ok := fns["TickFunction"]
	if !ok {
		return nil, errors.New("devserver: template: no TickFunction")
	}
	vars[app.EnvTable], vars[app.EnvBucket], vars[app.EnvQueueURL] = res.Table, res.Bucket, res.QueueURL
	vars[app.EnvAgents], vars[app.EnvLogFormat] = agentFile, "text"
	// Streams go to the provisioned bucket, a general purpose one: the
	// emulator has no directory buckets.
	vars[app.EnvStreamBucket], vars[app.EnvStreamBucketType] = res.Bucket, string(streams.Standard)
	// The chat's settings are the template's parameters: locally, the
	// process environment's.
	app.SetChatFromOS(vars)
	// /mcp serves every local agent unless BATON_MCP_AGENTS says which.
	app.SetMCPFromOS(vars)
	// The retention sweep runs on the deployed daily schedule only: locally
	// every session is kept.
	vars[app.EnvRetentionDays] = ""
	return vars, nil
}

// banner is the dev server's how-to: where the API, console and data are,
// the agents, and the curl commands of a first session. dataDir empty
// says the data is in memory.
func banner(url string, emu *emulator.Emulator, dataDir string, names []string) string {
	endpoint := "in-process kumo, data in memory (gone when the server stops; KUMO_DATA_DIR=DIR keeps it)"
	if dataDir == "" {
		dataDir = emu.DataDir
	}
	if dataDir != "" {
		endpoint = "in-process kumo, data in " + dataDir
	}
	if emu.External {
		endpoint = emu.URL
	}
	first, text, note := "demo", "Send the team a status update", "\n  (demo is a fixed script: it ignores the text you send, calls its tools, and asks approval to send)"
	if !slices.Contains(names, first) {
		first, text, note = "", "Hello", ""
		if len(names) > 0 {
			first = names[0]
		}
	}
	return fmt.Sprintf(howTo, url, url, endpoint, strings.Join(names, ", "), note, url, first, url, text, url, url, url, url)
}

const howTo = `
baton dev server
  operator API  %s   (you are operator "local"; send X-Baton-Operator to be someone else)
  web console   %s/console/
  AWS endpoint  %s
  agents        %s%s

Try it:
  curl -s -XPOST %s/sessions -H 'content-type: application/json' -d '{"agent":"%s"}'
  curl -s -XPOST %s/sessions/$ID/messages -H 'content-type: application/json' -d '{"text":"%s"}'
  curl -s %s/sessions/$ID                      # status, open turn, pending approval
  curl -sN -H 'accept: text/event-stream' %s/sessions/$ID/turns/$TURN/stream
  curl -s -XPOST %s/sessions/$ID/approvals/$APPROVAL -H 'content-type: application/json' -d '{"decision":"approve"}'
  curl -s -XPOST %s/sessions/$ID/approvals/$APPROVAL -H 'content-type: application/json' -d '{"decision":"deny","reason":"not now"}'

`
