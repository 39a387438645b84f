package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/baton-run/baton/internal/guard"
	"github.com/baton-run/baton/internal/guard/declared"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"

	"github.com/baton-run/baton/internal/agentspec"
	"github.com/baton-run/baton/internal/apikey"
	"github.com/baton-run/baton/internal/children/spawn"
	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/mcp"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/internal/tool/remote"
	"github.com/baton-run/baton/pkg/turn"
)

// Provider builds a model for an agent. apiKey is the value of the
// agent's APIKeyEnv, if it named one.
type Provider func(ctx context.Context, c Config, apiKey string) (model.Model, error)

// Deps are what building agents may need from outside.
type Deps struct {
	// Providers by name, besides the built-in "scripted".
	Providers map[string]Provider
	// Builtins are the Go tools agents may name, such as tool.Demo() for
	// the demo agent. Nil means none.
	Builtins []tool.Tool
	// Tools are Go tools the program registered, which agents may name
	// besides the built-ins. A name may not be both.
	Tools []tool.Tool
	// MCP reaches the agents' MCP servers (see package
	// github.com/baton-run/baton/internal/mcp/mcpsdk). Nil means none: agents
	// with servers still build, and their turns fail to list the tools
	// (mcp.NoDialerError). Build checks header values with Getenv; the
	// Dialer reads them with its own (mcpsdk.Dialer.Getenv).
	MCP mcp.Dialer
	// Declared builds a tool declared in the file (kind lambda or http).
	// Nil means declared tools are refused.
	Declared func(d Decl) (tool.Tool, error)
	// Guardrails builds a guardrail declared in the file; nil builds them
	// with the default HTTP client and no Lambda invoker.
	Guardrails func(d declared.Decl) (guard.Guardrail, error)
	// Getenv reads API keys; nil means os.Getenv.
	Getenv func(string) string
	// Keys fetches and caches the keys agents name by secret (apiKeySecret,
	// or BATON_<PROVIDER>_KEY_SECRET). Nil means no secret store: such an
	// agent is a configuration error where its provider is registered.
	Keys *apikey.Cache
}

// Load reads, validates and builds the agents of the file name in fsys.
func Load(ctx context.Context, fsys fs.FS, name string, deps Deps) (turn.AgentMap, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, &ConfigError{File: name, Err: err}
	}
	f, err := Parse(name, data)
	if err != nil {
		return nil, err
	}
	return Build(ctx, fsys, name, f, deps)
}

// Build validates every agent of f and builds them. fsys and name locate
// files the config refers to (scripts), relative to name's directory.
func Build(ctx context.Context, fsys fs.FS, name string, f File, deps Deps) (turn.AgentMap, error) {
	getenv := deps.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	named, err := namedTools(deps.Builtins, deps.Tools)
	if err != nil {
		return nil, &ConfigError{File: name, Err: err}
	}
	b := &builder{fsys: fsys, name: name, deps: deps, getenv: getenv, named: named}
	out := turn.AgentMap{}
	var errs []error
	for _, an := range f.names() {
		bad := func(field string, err error) {
			errs = append(errs, &ConfigError{File: name, Agent: an, Field: field, Err: err})
		}
		if an == "" {
			bad("", errors.New("an agent has an empty name"))
			continue
		}
		out[an] = b.agent(ctx, an, f.Agents[an], bad)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// builder builds the agents of one file; bad, passed to each method,
// records a field's error and lets the build go on to find the next.
type builder struct {
	fsys   fs.FS
	name   string // the file
	deps   Deps
	getenv func(string) string
	named  map[string]tool.Tool
}

// agent checks and builds the agent an of config c.
func (b *builder) agent(ctx context.Context, an string, c Config, bad func(string, error)) *turn.Agent {
	a := &turn.Agent{Name: an, System: c.System, MaxTokens: c.MaxOutputTokens, MaxToolOutput: c.MaxToolOutput}
	lim, field, limErr := c.Limits.limits()
	if limErr != nil {
		bad(field, limErr)
	}
	a.Limits = lim
	if field, err := pricing(c.Pricing); err != nil {
		bad(field, err)
	}
	a.Price = c.Pricing
	a.Steering = c.Steering
	a.OnChange = c.OnChange
	a.Files = c.Files
	if err := c.Files.Check(); err != nil {
		bad("files", err)
	}
	var err error
	if a.Children, err = spawn.Config(c.Children, c.Agents, c.Handoffs, c.MaxDepth, c.MaxChildren); err != nil {
		bad("children", err)
	}
	shared := agentspec.Shared{System: c.System, MaxOutputTokens: c.MaxOutputTokens, MaxToolOutput: c.MaxToolOutput, Children: a.Children,
		Steering: c.Steering, OnChange: c.OnChange}
	if limErr == nil {
		// Limits that did not parse are refused already.
		shared.Limits = lim
	}
	if c.Compaction != nil {
		shared.CompactionPrompt = c.Compaction.Prompt
	}
	agentspec.CheckShared(shared, bad)
	a.Model = b.model(ctx, c, bad)
	a.Identity = identity(c)
	if c.Compaction != nil {
		comp, field, err := b.compaction(ctx, c)
		if err != nil {
			bad(field, err)
		}
		a.Compaction = comp
	}
	a.Tools, a.Remote = agentspec.Assemble(b.local(c, lim, bad), b.servers(c, bad), c.Approvals, b.deps.MCP, b.getenv, bad)
	a.Guardrails = b.guardrails(c, bad)
	return a
}

// guardrails builds c's declared guardrails, remote checkers reaching out
// through the deps' Guardrails (or, without one, with no Lambda invoker).
func (b *builder) guardrails(c Config, bad func(string, error)) []guard.Guardrail {
	build := b.deps.Guardrails
	if build == nil {
		build = func(d declared.Decl) (guard.Guardrail, error) { return d.Build(nil, nil) }
	}
	var out []guard.Guardrail
	for i, d := range c.Guardrails {
		g, err := build(d)
		if err != nil {
			bad(fmt.Sprintf("guardrails[%d]", i), err)
			continue
		}
		out = append(out, g)
	}
	if err := guard.Validate(out); err != nil {
		bad("guardrails", err)
	}
	return out
}

// identity names c's model as the OpenTelemetry GenAI conventions name
// providers (gen_ai.provider.name), for traces and metrics.
func identity(c Config) model.Identity {
	p := c.Provider
	if p == "bedrock" {
		p = "aws.bedrock"
	}
	return model.Identity{Provider: p, Name: c.Model}
}

// model builds c's model: a script, or one of the providers.
func (b *builder) model(ctx context.Context, c Config, bad func(string, error)) model.Model {
	switch c.Provider {
	case "":
		bad("provider", errors.New("missing"))
		return nil
	case "scripted":
		scriptedOnly(c, bad)
		m, err := script(b.fsys, b.name, c.Script)
		if err != nil {
			bad("script", err)
		}
		return m
	}
	p, ok := b.deps.Providers[c.Provider]
	if !ok && !slices.Contains(ProviderNames(), c.Provider) {
		bad("provider", fmt.Errorf("unknown provider %q", c.Provider))
		return nil
	}
	if c.Model == "" {
		bad("model", errors.New("missing"))
		return nil
	}
	keyed, field, err := b.keyed(c, p)
	if err != nil {
		bad(field, err)
		return nil
	}
	if !ok {
		// A program that runs no model (the operator, the tick)
		// links no provider; its agents keep their policies.
		return unlinked{name: c.Provider}
	}
	m, err := keyed(ctx, c)
	if err != nil {
		bad("provider", err)
		return nil
	}
	return m
}

// scriptedOnly refuses, on a scripted agent, the fields that mean nothing
// for a script: an API key (apiKeySecret, apiKeyEnv), an endpoint
// (baseURL), echoReasoning. (Its model names it in traces.) Left in, they would be silently
// ignored, and a reader would believe the agent used them.
func scriptedOnly(c Config, bad func(string, error)) {
	for _, f := range []struct {
		field string
		set   bool
	}{
		{"apiKeySecret", c.APIKeySecret != ""}, {"apiKeyEnv", c.APIKeyEnv != ""}, {"baseURL", c.BaseURL != ""},
		{"echoReasoning", c.EchoReasoning},
	} {
		if f.set {
			bad(f.field, errors.New("a scripted agent has no provider to give it to: remove it"))
		}
	}
}

// local resolves c's tools: declared in the file, or named.
func (b *builder) local(c Config, lim turn.Limits, bad func(string, error)) []agentspec.Local {
	var local []agentspec.Local
	for i, ref := range c.Tools {
		field := fmt.Sprintf("tools[%d]", i)
		t, err := b.tool(ref)
		if err != nil {
			bad(field, err)
			continue
		}
		if sub, err := agentspec.CheckTool(t, lim); err != nil {
			bad(field+"."+sub, fmt.Errorf("tool %q: %w", t.Name, err))
			continue
		}
		local = append(local, agentspec.Local{Field: field, Tool: t})
	}
	return local
}

// tool resolves one tool reference.
func (b *builder) tool(ref ToolRef) (tool.Tool, error) {
	if ref.Decl == nil {
		t, found := b.named[ref.Name]
		if !found {
			return tool.Tool{}, fmt.Errorf("unknown tool %q", ref.Name)
		}
		return policy(t, ref.Timeout, ref.Retry)
	}
	if b.deps.Declared == nil {
		return tool.Tool{}, fmt.Errorf("declared tool %q: no declared tools here", ref.Name)
	}
	if err := ref.Decl.validate(); err != nil {
		return tool.Tool{}, err
	}
	t, err := b.deps.Declared(*ref.Decl)
	if err != nil {
		return tool.Tool{}, err
	}
	if ref.Decl.Approval != nil {
		tool.Approve(&t, *ref.Decl.Approval)
	}
	if len(ref.Decl.Claims) > 0 {
		tool.Claim(&t, ref.Decl.Claims...)
	}
	if cb := ref.Decl.Callback; cb != nil {
		p, _ := cb.policy() // validate checked it
		t.Callback = &p
	}
	return policy(t, ref.Decl.Timeout, ref.Decl.Retry)
}

// servers checks c's MCP servers.
func (b *builder) servers(c Config, bad func(string, error)) []agentspec.Remote {
	var servers []agentspec.Remote
	for i, s := range c.MCP {
		field := fmt.Sprintf("mcp[%d]", i)
		ms, err := s.server()
		if err != nil {
			bad(field+".timeout", err)
			continue
		}
		servers = append(servers, agentspec.Remote{Field: field, Server: ms})
	}
	return servers
}

// namedTools indexes the tools agents may name: the built-ins and the
// program's own, which must not share a name.
func namedTools(builtins, extra []tool.Tool) (map[string]tool.Tool, error) {
	out := make(map[string]tool.Tool, len(builtins)+len(extra))
	for _, t := range builtins {
		out[t.Name] = t
	}
	for _, t := range extra {
		if _, dup := out[t.Name]; dup {
			return nil, fmt.Errorf("Go tool %q: a built-in or another Go tool has that name", t.Name)
		}
		out[t.Name] = t
	}
	return out, nil
}

// server converts the configuration; the only thing it checks is the
// timeout, as mcp.Server.Check checks the rest.
func (s MCPServer) server() (mcp.Server, error) {
	out := mcp.Server{Name: s.Name, URL: s.URL, HeaderEnv: s.HeaderEnv, Allow: s.Allow, Claims: s.Claims}
	if s.Timeout != "" {
		d, err := duration(s.Timeout, "")
		if err != nil {
			return mcp.Server{}, err
		}
		out.Timeout = d
	}
	return out, nil
}

func (d Decl) validate() error {
	if d.Name == "" {
		return errors.New("declared tool has no name")
	}
	switch d.Kind {
	case "lambda":
		if d.ARN == "" {
			return fmt.Errorf("tool %q: lambda tool needs arn", d.Name)
		}
	case "http":
		if d.URL == "" {
			return fmt.Errorf("tool %q: http tool needs url", d.Name)
		}
		u, err := url.Parse(d.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("tool %q: url %q: want an absolute http or https URL", d.Name, d.URL)
		}
	default:
		return fmt.Errorf("tool %q: kind %q: want lambda or http", d.Name, d.Kind)
	}
	switch tool.Effect(d.Effect) {
	case tool.Read, tool.Write, tool.External:
	default:
		return fmt.Errorf("tool %q: effect %q: want read, write or external", d.Name, d.Effect)
	}
	var schema map[string]any
	if err := json.Unmarshal(d.Schema, &schema); err != nil || schema["type"] != "object" {
		return fmt.Errorf("tool %q: schema must be a JSON Schema object with type object", d.Name)
	}
	if err := tool.CheckSchema(d.Name, d.Schema); err != nil {
		return err
	}
	// That each claim's field is a string property of the tool's input
	// schema is checked with the agent's tools (agentspec.Assemble).
	if err := claims.CheckDeclared(tool.Tool{Effect: tool.Effect(d.Effect)}.SideEffect(), d.Claims); err != nil {
		return fmt.Errorf("tool %q: claims: %w", d.Name, err)
	}
	if d.Callback != nil {
		if !(tool.Tool{Effect: tool.Effect(d.Effect)}).SideEffect() {
			return fmt.Errorf("tool %q: callback: only a write or external tool completes by callback", d.Name)
		}
		if _, err := d.Callback.policy(); err != nil {
			return fmt.Errorf("tool %q: %w", d.Name, err)
		}
	}
	if d.Timeout != "" {
		if _, err := duration(d.Timeout, ""); err != nil {
			return fmt.Errorf("tool %q: timeout: %w", d.Name, err)
		}
	}
	return nil
}

// DeclaredTools returns a Deps.Declared that builds lambda tools with
// lambdaClient and http tools with httpClient. A declaration without a
// timeout gets 30s. With a nil lambdaClient (a program that runs no tool)
// lambda tools are still built, and their calls fail the turn
// (remote.ErrNoLambdaInvoker).
func DeclaredTools(lambdaClient remote.LambdaInvoker, httpClient *http.Client) func(Decl) (tool.Tool, error) {
	return func(d Decl) (tool.Tool, error) {
		timeout, err := duration(d.Timeout, "30s")
		if err != nil {
			return tool.Tool{}, fmt.Errorf("tool %q: timeout: %w", d.Name, err)
		}
		effect := tool.Effect(d.Effect)
		switch d.Kind {
		case "lambda":
			return remote.LambdaTool(d.Name, d.Description, d.Schema, effect, d.Idempotent, d.ARN, timeout, lambdaClient), nil
		case "http":
			return remote.HTTPTool(d.Name, d.Description, d.Schema, effect, d.Idempotent, d.URL, timeout, httpClient), nil
		}
		return tool.Tool{}, fmt.Errorf("tool %q: kind %q: want lambda or http", d.Name, d.Kind)
	}
}

// compaction builds c's compaction policy. It returns the field at fault
// with an error.
func (b *builder) compaction(ctx context.Context, c Config) (*turn.Compaction, string, error) {
	var keyed func(context.Context, Config) (model.Model, error)
	if p := b.deps.Providers[c.Provider]; p != nil && c.Provider != "scripted" {
		var err error
		if keyed, _, err = b.keyed(c, p); err != nil {
			keyed = nil // reported with the agent's own model
		}
	}
	return compaction(b.fsys, b.name, c, func(named Config) (model.Model, error) { return keyed(ctx, named) }, keyed != nil)
}

// compaction builds c's compaction policy; build makes a model of c's
// provider with c's key, when linked. It returns the field at fault with
// an error.
func compaction(fsys fs.FS, name string, c Config, build func(Config) (model.Model, error), linked bool) (*turn.Compaction, string, error) {
	cc := c.Compaction
	out := &turn.Compaction{InputTokens: cc.InputTokens, KeepTurns: cc.KeepTurns, KeepSteps: cc.KeepSteps, Prompt: cc.Prompt,
		MaxTokens: cc.MaxOutputTokens, Price: cc.Pricing}
	switch {
	case cc.InputTokens <= 0:
		return nil, "compaction.inputTokens", errors.New("must be a positive number of tokens")
	case cc.KeepTurns < -1:
		return nil, "compaction.keepTurns", errors.New("must be -1 (keep none) or more")
	case cc.KeepSteps < -1:
		return nil, "compaction.keepSteps", errors.New("must be -1 (keep none) or more")
	case cc.MaxOutputTokens < 0:
		return nil, "compaction.maxOutputTokens", errors.New("negative")
	}
	if field, err := pricing(cc.Pricing); err != nil {
		return nil, "compaction." + field, err
	}
	if c.Provider == "scripted" {
		if cc.Model != "" {
			return nil, "compaction.model", errors.New("a scripted agent's summariser is a script (compaction.script)")
		}
		if len(cc.Script) > 0 {
			m, err := script(fsys, name, cc.Script)
			if err != nil {
				return nil, "compaction.script", err
			}
			out.Model, out.Name = m, "script"
		}
		return out, "", nil
	}
	if len(cc.Script) > 0 {
		return nil, "compaction.script", errors.New("only a scripted agent has a summariser script")
	}
	if cc.Model != "" && linked {
		named := c
		named.Model = cc.Model
		m, err := build(named)
		if err != nil {
			return nil, "compaction.model", err
		}
		out.Model, out.Name = m, cc.Model
	}
	return out, "", nil
}

// script loads a scripted model from a path next to the config, or inline.
func script(fsys fs.FS, name string, raw json.RawMessage) (*model.Scripted, error) {
	if len(raw) == 0 {
		return nil, errors.New("missing")
	}
	if raw[0] == '"' {
		var p string
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		data, err := fs.ReadFile(fsys, path.Join(path.Dir(name), p))
		if err != nil {
			return nil, err
		}
		return model.ParseScript(data)
	}
	return model.ParseScript(raw)
}
