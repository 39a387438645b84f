package agents

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/baton-run/baton/internal/guard/declared"
	"io"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/baton-run/baton/internal/callback"
	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/files"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

//go:embed demo.json demo.script.json
var demoFS embed.FS

// Demo returns the embedded demo configuration: one scripted agent, "demo",
// whose turn streams text, calls a read tool, then asks approval to send an
// email.
func Demo() (fs.FS, string) { return demoFS, "demo.json" }

// File is an agent configuration file.
type File struct {
	Agents map[string]Config `json:"agents"`
}

// Config is one agent.
type Config struct {
	// Provider is scripted, anthropic, openai or bedrock.
	Provider string `json:"provider"`
	Model    string `json:"model,omitempty"`
	// Script is, for the scripted provider, a path relative to the file or
	// an inline script object.
	Script json.RawMessage `json:"script,omitempty"`
	// BaseURL overrides the provider's endpoint (OpenAI-compatible servers).
	BaseURL string `json:"baseURL,omitempty"`
	// APIKeyEnv names the environment variable holding the API key.
	APIKeyEnv string `json:"apiKeyEnv,omitempty"`
	// APIKeySecret names the secret holding the API key (see package
	// apikey for the form: an ARN, ssm:<parameter name>, or a Secrets
	// Manager secret's name). Without it or APIKeyEnv, the reference in
	// the environment variable BATON_<PROVIDER>_KEY_SECRET is used when
	// set (SecretEnv). The key is fetched on the agent's first model call.
	APIKeySecret string `json:"apiKeySecret,omitempty"`
	// EchoReasoning sends reasoning back to OpenAI-compatible servers that
	// require it with tool calls (DeepSeek-style thinking).
	EchoReasoning bool   `json:"echoReasoning,omitempty"`
	System        string `json:"system,omitempty"`
	// Tools lists built-in tool names, names of Go tools the program
	// registered (Deps.Tools), or declared tools.
	Tools []ToolRef `json:"tools,omitempty"`
	// MCP lists remote MCP servers whose allowed tools the agent may call,
	// after its other tools. Loading the file does not reach them: a turn
	// lists their tools when it starts.
	MCP []MCPServer `json:"mcp,omitempty"`
	// Approvals maps a tool name to its approval rule, overriding the tool's own.
	Approvals       map[string]Rule `json:"approvals,omitempty"`
	Limits          Limits          `json:"limits,omitzero"`
	MaxOutputTokens int             `json:"maxOutputTokens,omitempty"`
	// MaxToolOutput caps a tool result in bytes; longer output is truncated
	// and marked. Zero means 16 KiB.
	MaxToolOutput int `json:"maxToolOutput,omitempty"`
	// Pricing is the model's price table, in USD per million tokens; with
	// it each step's cost is recorded and the cost caps apply.
	Pricing *reducer.Price `json:"pricing,omitempty"`
	// Compaction summarises older history once the model's input would
	// pass a token budget (turn.Compaction).
	Compaction *Compaction `json:"compaction,omitempty"`
	// Steering is the policy for a message that arrives while a turn is
	// open: enqueue (the default), steer, interrupt or reject.
	Steering reducer.Steering `json:"steering,omitempty"`
	// OnChange is what a turn does when it resumes on a changed
	// definition: continue (the default), fail or pin (see
	// turn.Agent.OnChange).
	OnChange reducer.OnChange `json:"onChange,omitempty"`
	// Files is what a message to the agent may carry: {"types":
	// ["image/*", "application/pdf"], "maxBytes": N, "maxFiles": N,
	// "fetchURLs": true}; absent, images and PDF up to 20 MB, 5 a message.
	Files files.Policy `json:"files,omitzero"`
	// Agents names the agents this one may call as tools (a tool per
	// agent, of its name, taking a task): each call runs in a child
	// session, and the child's final answer is the call's result.
	// Handoffs names those it may hand the conversation to
	// (handoff_to_<agent>). Children is when a turn waiting for several
	// children resumes: all (the default) or each; MaxDepth and
	// MaxChildren bound the nesting and the children of a turn (see
	// turn.Children).
	Agents      []string `json:"agents,omitempty"`
	Handoffs    []string `json:"handoffs,omitempty"`
	Children    string   `json:"children,omitempty"`
	MaxDepth    int      `json:"maxDepth,omitempty"`
	MaxChildren int      `json:"maxChildren,omitempty"`
	// Guardrails check each message a turn answers (stage input) and each
	// step's text (stage output): patterns, a maxLength, or an HTTP (url)
	// or Lambda (lambda) checker (see package guard/declared).
	Guardrails []declared.Decl `json:"guardrails,omitempty"`
}

// Compaction is an agent's context compaction policy: past inputTokens of
// model input, the ended turns before the last keepTurns (default 2, -1
// for none) are summarised; with none left, the open turn's steps before
// the last keepSteps (default 4, -1 for none). The summariser is the agent's own model, or
// model, another model of the agent's provider (priced by pricing), or for
// a scripted agent script.
type Compaction struct {
	InputTokens     int64           `json:"inputTokens"`
	KeepTurns       int             `json:"keepTurns,omitempty"`
	KeepSteps       int             `json:"keepSteps,omitempty"`
	Model           string          `json:"model,omitempty"`
	Script          json.RawMessage `json:"script,omitempty"`
	Pricing         *reducer.Price  `json:"pricing,omitempty"`
	Prompt          string          `json:"prompt,omitempty"`
	MaxOutputTokens int             `json:"maxOutputTokens,omitempty"`
}

// Limits are an agent's budgets, as Go durations and counts.
type Limits struct {
	Budget                string `json:"budget,omitempty"`
	Margin                string `json:"margin,omitempty"`
	MaxStepsPerInvocation int    `json:"maxStepsPerInvocation,omitempty"`
	MaxStepsPerTurn       int    `json:"maxStepsPerTurn,omitempty"`
	MaxInvocationsPerTurn int    `json:"maxInvocationsPerTurn,omitempty"`
	LeaseGrace            string `json:"leaseGrace,omitempty"`
	ApprovalTTL           string `json:"approvalTTL,omitempty"`
	// ThrottleDelay is the old name of modelRetry.wakeDelay, still read
	// when that is not set.
	ThrottleDelay string `json:"throttleDelay,omitempty"`
	// LiveFlush streams an unfinished step's parts this often (e.g.
	// "250ms"); empty flushes at step ends only.
	LiveFlush string `json:"liveFlush,omitempty"`
	// ModelRetry is how the agent rides out transient model faults.
	ModelRetry ModelRetry `json:"modelRetry,omitzero"`
	// Spend caps tokens and cost per turn and per session.
	Spend Spend `json:"spend,omitzero"`
}

// Spend is an agent's spend caps (see turn.Spend): zero fields are no
// limit, cost is in USD. OnExceeded is "suspend" (the default: the turn
// waits for an operator to raise the cap or cancel) or "fail".
type Spend struct {
	Turn       reducer.Caps `json:"turn,omitzero"`
	Session    reducer.Caps `json:"session,omitzero"`
	OnExceeded string       `json:"onExceeded,omitempty"`
}

// spend converts the configured spend caps and checks onExceeded, naming
// the field at fault; agentspec.CheckLimits checks the caps.
func (s Spend) spend() (turn.Spend, string, error) {
	out := turn.Spend{Turn: s.Turn, Session: s.Session}
	switch s.OnExceeded {
	case "", "suspend":
	case "fail":
		out.Fail = true
	default:
		return turn.Spend{}, "limits.spend.onExceeded", fmt.Errorf("%q: want suspend or fail", s.OnExceeded)
	}
	return out, "", nil
}

// pricing checks a price table.
func pricing(p *reducer.Price) (string, error) {
	switch {
	case p == nil:
	case p.InputPerMTok < 0:
		return "pricing.inputPerMTok", errors.New("negative")
	case p.OutputPerMTok < 0:
		return "pricing.outputPerMTok", errors.New("negative")
	}
	return "", nil
}

// ModelRetry is an agent's policy for transient model faults (see
// model.RetryPolicy): a failed step is redone up to attempts times within
// an invocation, waiting backoff (doubling, up to maxBackoff) between
// tries; a fault that outlasts that suspends the turn with a wake delayed
// by wakeDelay (doubling with each suspension in a row, up to
// maxWakeDelay); the suspension after maxSuspensions in a row fails the
// turn. Empty fields take model.DefaultRetryPolicy's values.
type ModelRetry struct {
	Attempts       int    `json:"attempts,omitempty"`
	Backoff        string `json:"backoff,omitempty"`
	MaxBackoff     string `json:"maxBackoff,omitempty"`
	WakeDelay      string `json:"wakeDelay,omitempty"`
	MaxWakeDelay   string `json:"maxWakeDelay,omitempty"`
	MaxSuspensions int    `json:"maxSuspensions,omitempty"`
}

// ToolRef is a tool name, or a tool declared without code. A named tool
// may also be an object that sets its timeout and retry policy:
// {"name": "lookup", "timeout": "5s", "retry": {"attempts": 3, "backoff": "200ms"}}.
type ToolRef struct {
	Name string
	Decl *Decl
	// Timeout and Retry are a named tool's policy (a declaration has its
	// own).
	Timeout string
	Retry   *ToolRetry
}

// named is the object form of a named tool with its policy.
type named struct {
	Name    string     `json:"name"`
	Timeout string     `json:"timeout,omitempty"`
	Retry   *ToolRetry `json:"retry,omitempty"`
}

// UnmarshalJSON accepts a string, a named tool's policy object, or a
// declaration object.
func (r *ToolRef) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &r.Name)
	}
	var d Decl
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return err
	}
	var n named
	if dec := json.NewDecoder(bytes.NewReader(b)); dec.Decode(&n) == nil && d.policyOnly() {
		r.Name, r.Timeout, r.Retry = n.Name, n.Timeout, n.Retry
		return nil
	}
	r.Name, r.Decl = d.Name, &d
	return nil
}

// policyOnly reports whether d names a tool and sets only its policy.
func (d Decl) policyOnly() bool {
	return d.Kind == "" && d.Description == "" && d.Schema == nil && d.Effect == "" && !d.Idempotent &&
		d.ARN == "" && d.URL == "" && d.Approval == nil
}

// MarshalJSON writes the name, the policy object or the declaration.
func (r ToolRef) MarshalJSON() ([]byte, error) {
	if r.Decl != nil {
		return json.Marshal(r.Decl)
	}
	if r.Timeout != "" || r.Retry != nil {
		return json.Marshal(named{Name: r.Name, Timeout: r.Timeout, Retry: r.Retry})
	}
	return json.Marshal(r.Name)
}

// Decl declares a Lambda or HTTP tool.
type Decl struct {
	Name        string          `json:"name"`
	Kind        string          `json:"kind"` // lambda or http
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Effect      string          `json:"effect"` // read, write or external
	Idempotent  bool            `json:"idempotent,omitempty"`
	ARN         string          `json:"arn,omitempty"`     // lambda
	URL         string          `json:"url,omitempty"`     // http
	Timeout     string          `json:"timeout,omitempty"` // http and lambda; default 30s
	Retry       *ToolRetry      `json:"retry,omitempty"`   // transient errors; see ToolRetry
	Approval    *Rule           `json:"approval,omitempty"`
	// Claims are the resource claims a call needs, each keyed by a
	// top-level string field of the input (only write and external tools
	// claim; see package claims).
	Claims []claims.Static `json:"claims,omitempty"`
	// Callback makes the tool complete by callback: its request carries a
	// callback (token and URL), it answers at once, and the call's result
	// is what is later posted to the URL, or a timeout error (only write
	// and external tools; see package callback).
	Callback *CallbackDecl `json:"callback,omitempty"`
}

// CallbackDecl is a declared tool's callback policy: Go durations, the
// timeout 24h when empty, the heartbeat none when empty.
type CallbackDecl struct {
	Timeout   string `json:"timeout,omitempty"`
	Heartbeat string `json:"heartbeat,omitempty"`
}

// policy is d's callback.Policy.
func (d CallbackDecl) policy() (callback.Policy, error) {
	var p callback.Policy
	for _, f := range []struct {
		name, v string
		dst     *time.Duration
	}{{"timeout", d.Timeout, &p.Timeout}, {"heartbeat", d.Heartbeat, &p.Heartbeat}} {
		if f.v == "" {
			continue
		}
		v, err := time.ParseDuration(f.v)
		if err != nil {
			return p, fmt.Errorf("callback %s %q: want a Go duration such as 2h", f.name, f.v)
		}
		*f.dst = v
	}
	return p, p.Check()
}

// MCPServer is a remote MCP server reached over streamable HTTP (see
// package mcp for how its tools' annotations become effects and approval
// rules; the agent's approvals override them by tool name).
type MCPServer struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	// HeaderEnv maps an HTTP header to the environment variable holding
	// its value, such as {"Authorization": "GITHUB_MCP_TOKEN"}.
	HeaderEnv map[string]string `json:"headerEnv,omitempty"`
	// Allow names the server's tools the agent may call. Required.
	Allow []string `json:"allow"`
	// Timeout bounds each request to the server (a Go duration); default 30s.
	Timeout string `json:"timeout,omitempty"`
	// Claims are, by allowed tool, the resource claims a call needs, as
	// for a declared tool: {"push": [{"namespace": "branch", "field":
	// "branch", "access": "write"}]}.
	Claims map[string][]claims.Static `json:"claims,omitempty"`
}

// Rule is an approval policy: "never", "always", or conditions on the
// input, any of which asks for approval. It is package tool's, the one
// rule every kind of tool uses, and fails closed: see tool.Rule.
type Rule = tool.Rule

// PrefixRule and OverRule are a Rule's conditions.
type (
	PrefixRule = tool.PrefixRule
	OverRule   = tool.OverRule
)

// ConfigError names the file, agent and field of a configuration error.
type ConfigError struct {
	File, Agent, Field string
	Err                error
}

func (e *ConfigError) Error() string {
	switch {
	case e.Agent == "":
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	case e.Field == "":
		return fmt.Sprintf("%s: agent %q: %v", e.File, e.Agent, e.Err)
	}
	return fmt.Sprintf("%s: agent %q: %s: %v", e.File, e.Agent, e.Field, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// Parse decodes a configuration file strictly: unknown fields are errors,
// and so is a member that appears twice in its object (which encoding/json
// would let the last of win), named by its path.
// A decoding error names the agent and, as far as it can be found, the
// field it is in.
func Parse(name string, data []byte) (File, error) {
	var top struct {
		Agents map[string]json.RawMessage `json:"agents"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&top); err != nil {
		return File{}, &ConfigError{File: name, Field: unknownField(err), Err: fmt.Errorf("parse: %w", err)}
	}
	if _, err := dec.Token(); err != io.EOF {
		return File{}, &ConfigError{File: name, Err: errors.New("parse: trailing data after the object")}
	}
	if path := duplicate(data); path != nil {
		return File{}, duplicateError(name, path)
	}
	if len(top.Agents) == 0 {
		return File{}, &ConfigError{File: name, Field: "agents", Err: errors.New("no agents")}
	}
	f := File{Agents: make(map[string]Config, len(top.Agents))}
	an := make([]string, 0, len(top.Agents))
	for n := range top.Agents {
		an = append(an, n)
	}
	sort.Strings(an)
	for _, n := range an {
		c, err := decodeStrict[Config](top.Agents[n])
		if err != nil {
			return File{}, &ConfigError{File: name, Agent: n, Field: locate(top.Agents[n]), Err: fmt.Errorf("parse: %w", err)}
		}
		f.Agents[n] = c
	}
	return f, nil
}

func decodeStrict[T any](raw []byte) (T, error) {
	var v T
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(&v)
	return v, err
}

// unknownField is the name in encoding/json's unknown-field error, or "".
func unknownField(err error) string {
	const pre = `json: unknown field "`
	if s := err.Error(); strings.HasPrefix(s, pre) && strings.HasSuffix(s, `"`) {
		return strings.TrimSuffix(strings.TrimPrefix(s, pre), `"`)
	}
	return ""
}

// locate finds the field of an agent object that does not decode, by
// decoding its members one at a time: "model", "limits.budget",
// "tools[2]", "approvals.send_email". It returns "" when no single member
// is at fault.
func locate(agent json.RawMessage) string {
	var members map[string]json.RawMessage
	if json.Unmarshal(agent, &members) != nil {
		return ""
	}
	keys := make([]string, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fails := func(k string, v any) bool {
		b, err := json.Marshal(map[string]any{k: v})
		if err != nil {
			return true
		}
		_, err = decodeStrict[Config](b)
		return err != nil
	}
	for _, k := range keys {
		v := members[k]
		if !fails(k, v) {
			continue
		}
		switch k {
		case "limits", "approvals":
			var sub map[string]json.RawMessage
			if json.Unmarshal(v, &sub) == nil {
				subKeys := make([]string, 0, len(sub))
				for sk := range sub {
					subKeys = append(subKeys, sk)
				}
				sort.Strings(subKeys)
				for _, sk := range subKeys {
					if fails(k, map[string]json.RawMessage{sk: sub[sk]}) {
						return k + "." + sk
					}
				}
			}
		case "tools", "mcp":
			var items []json.RawMessage
			if json.Unmarshal(v, &items) == nil {
				for i, it := range items {
					if fails(k, []json.RawMessage{it}) {
						return fmt.Sprintf("%s[%d]", k, i)
					}
				}
			}
		}
		return k
	}
	return ""
}

// names returns the agent names in order, for stable error reporting.
func (f File) names() []string {
	out := make([]string, 0, len(f.Agents))
	for n := range f.Agents {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func duration(s, def string) (time.Duration, error) {
	if s == "" {
		s = def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, fmt.Errorf("%s is not positive", s)
	}
	return d, nil
}

// limits converts the configured limits; agentspec.CheckShared checks
// them.
func (l Limits) limits() (turn.Limits, string, error) {
	var out turn.Limits
	var err error
	for _, d := range []struct {
		field string
		in    string
		dst   *time.Duration
	}{
		{"limits.budget", l.Budget, &out.Budget},
		{"limits.margin", l.Margin, &out.Margin},
		{"limits.leaseGrace", l.LeaseGrace, &out.LeaseGrace},
		{"limits.approvalTTL", l.ApprovalTTL, &out.ApprovalTTL},
		{"limits.throttleDelay", l.ThrottleDelay, &out.ModelRetry.WakeDelay},
		{"limits.liveFlush", l.LiveFlush, &out.LiveFlush},
		{"limits.modelRetry.backoff", l.ModelRetry.Backoff, &out.ModelRetry.Backoff},
		{"limits.modelRetry.maxBackoff", l.ModelRetry.MaxBackoff, &out.ModelRetry.MaxBackoff},
		{"limits.modelRetry.wakeDelay", l.ModelRetry.WakeDelay, &out.ModelRetry.WakeDelay},
		{"limits.modelRetry.maxWakeDelay", l.ModelRetry.MaxWakeDelay, &out.ModelRetry.MaxWakeDelay},
	} {
		if d.in == "" {
			continue
		}
		if *d.dst, err = duration(d.in, ""); err != nil {
			return out, d.field, err
		}
	}
	out.MaxStepsPerInvocation, out.MaxStepsPerTurn = l.MaxStepsPerInvocation, l.MaxStepsPerTurn
	out.MaxInvocationsPerTurn = l.MaxInvocationsPerTurn
	out.ModelRetry.Attempts, out.ModelRetry.Suspensions = l.ModelRetry.Attempts, l.ModelRetry.MaxSuspensions
	var field string
	if out.Spend, field, err = l.Spend.spend(); err != nil {
		return out, field, err
	}
	return out, "", nil
}
