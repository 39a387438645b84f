// Command baton runs baton locally.
//
//	baton dev        the dev server: emulator, demo agent, operator API on 127.0.0.1:8080
//	baton provision  create the table, bucket and queues at AWS_ENDPOINT_URL
//	baton init DIR   write a new project that imports baton as a module
//	                 (-module PATH, -replace BATON_CHECKOUT, -version V,
//	                 -agent NAME; built from a checkout, it uses that one)
//	baton template   print the project's template.yaml and Makefile as
//	                 this baton derives them; --diff compares them with
//	                 the files in the current directory, -w rewrites them
//	baton replay     replay an exported session against an agent file's
//	                 agents and report each divergence
//	baton help       the client commands (sessions, new, send, tail, approve,
//	                 deny, verdict, cancel) of the operator API
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/dev"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/awsenv/awsconfig"
	"github.com/baton-run/baton/internal/cli"
	"github.com/baton-run/baton/internal/provision"
	"github.com/baton-run/baton/providers"
	"github.com/baton-run/baton/providers/otel"
)

func main() {
	if args := os.Args[1:]; len(args) > 0 && args[0] == "replay" {
		// The client commands' CLI, with the engine only this binary links.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := cli.Replay(ctx, args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv, replayEngine)
		stop()
		os.Exit(code)
	}
	if args := os.Args[1:]; len(args) == 0 || !local[args[0]] {
		// Every other command is a client of the operator API.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := cli.Run(ctx, args, os.Stdin, os.Stdout, os.Stderr, os.Getenv)
		stop()
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "baton:", err)
		os.Exit(1)
	}
}

// local are the commands that do not talk to the operator API.
var local = map[string]bool{"dev": true, "provision": true, "init": true, "template": true}

// run runs dev, provision, init or template. Asked for help (-h, -help or
// --help before any "--"), dev and provision print their help to stdout and
// do nothing else.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: baton dev | provision | init DIR | template")
	}
	switch args[0] {
	case "dev":
		fs := flag.NewFlagSet("dev", flag.ContinueOnError)
		opts := dev.Options{}
		fs.StringVar(&opts.Addr, "addr", "127.0.0.1:8080", "operator API address")
		fs.StringVar(&opts.DataDir, "data", ".baton/data", "where the embedded emulator keeps its data")
		fs.StringVar(&opts.AgentFile, "agents", app.AgentsFrom(os.Getenv), "agent config file (default: $"+app.EnvAgents+", else the embedded demo agent)")
		fs.DurationVar(&opts.Tick, "tick", 10*time.Second, "how often the tick runs")
		emf := fs.Bool("metrics", false, "write the metrics as CloudWatch EMF lines to stderr (off by default)")
		pos, help, err := parseLocal(fs, args[1:], stdout)
		if help || err != nil {
			return err
		}
		if len(pos) > 0 {
			return fmt.Errorf("dev takes no arguments, got %q (an agent file is --agents FILE)", pos)
		}
		// kumo reads KUMO_DATA_DIR when the process starts, so set it and
		// start again.
		if os.Getenv("AWS_ENDPOINT_URL") == "" && os.Getenv("KUMO_DATA_DIR") == "" && opts.DataDir != "" {
			return reexec(opts.DataDir)
		}
		opts.Out = stdout
		// The same Config as the functions': the repository's functions
		// and its dev server are programs of the public API.
		cfg := host.Config{Tools: baton.DemoTools(), Providers: providers.All(), MCP: providers.MCP(), MCPServer: providers.MCPServer(), KeyStore: providers.KeyStore(), Lambda: providers.Lambda()}
		if *emf {
			cfg.Metrics = os.Stderr
		}
		// Turns are traced as the resume function traces them, when the
		// standard OTEL_EXPORTER_OTLP_* variables name an endpoint.
		tracing, err := otel.FromEnv(ctx, os.Getenv)
		if err != nil {
			return fmt.Errorf("dev: tracing: %w", err)
		}
		if tracing != nil {
			cfg.Interceptors = append(cfg.Interceptors, tracing.Interceptor())
			defer tracing.Shutdown(context.WithoutCancel(ctx))
			fmt.Fprintln(stdout, "tracing turns over OTLP/HTTP (OTEL_EXPORTER_OTLP_*)")
		}
		return dev.Run(ctx, cfg, opts)
	case "init":
		return initProject(args[1:], stdout)
	case "template":
		return templateCmd(args[1:], ".", stdout)
	case "provision":
		fs := flag.NewFlagSet("provision", flag.ContinueOnError)
		pos, help, err := parseLocal(fs, args[1:], stdout)
		if help || err != nil {
			return err
		} else if len(pos) > 0 {
			return fmt.Errorf("provision takes no arguments, got %q", pos)
		}
		clients, err := awsconfig.Load(ctx)
		if err != nil {
			return err
		}
		res, err := provision.Provision(ctx, clients, baton.Template(), provision.DefaultNames())
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "BATON_TABLE=%s\nBATON_BUCKET=%s\nBATON_QUEUE_URL=%s\n", res.Table, res.Bucket, res.QueueURL)
		return nil
	}
	return fmt.Errorf("unknown command %q: want dev, provision, init or template", args[0])
}

func reexec(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	env := append(os.Environ(), "KUMO_DATA_DIR="+abs)
	return syscall.Exec(self, os.Args, env)
}
