package baton_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log"
	"regexp"
	"strings"
	"time"

	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/providers"

	baton "github.com/baton-run/baton"
)

// A Go tool: its input schema comes from the input type, and options say it
// only reads and may be repeated.
func ExampleFunc() {
	type city struct {
		City string `json:"city" jsonschema:"the city's name"`
	}
	type weather struct {
		City  string `json:"city"`
		TempC int    `json:"tempC"`
	}
	getWeather := baton.Func("get_weather", "Current weather for a city.",
		func(ctx context.Context, in city) (weather, error) {
			return weather{City: in.City, TempC: 21}, nil
		},
		baton.Read(), baton.Idempotent())

	fmt.Println(string(getWeather.Schema))
	out, err := getWeather.Run(context.Background(), baton.Call{Input: json.RawMessage(`{"city":"Lisbon"}`)})
	fmt.Println(string(out), err)
	// Output:
	// {"type":"object","properties":{"city":{"type":"string","description":"the city's name"}},"required":["city"],"additionalProperties":false}
	// {"city":"Lisbon","tempC":21} <nil>
}

// A tool whose large calls wait for an operator's approval.
func ExampleNeedsApproval() {
	type payment struct {
		To     string  `json:"to"`
		Amount float64 `json:"amount"`
	}
	pay := baton.Func("pay", "Pay an invoice.",
		func(ctx context.Context, in payment) (string, error) {
			// IdempotencyKey is the same for every run of this call.
			return "paid with key " + baton.IdempotencyKey(ctx), nil
		},
		baton.External(), baton.Idempotent(), baton.NeedsApproval(baton.Over("amount", 500)))

	fmt.Println(pay.Approval(json.RawMessage(`{"to":"acme","amount":120}`)))
	fmt.Println(pay.Approval(json.RawMessage(`{"to":"acme","amount":9000}`)))
	// Output:
	// false
	// true
}

// An agent defined in Go: a program passes it to host.New or host.Main (in
// Config.Agents), which checks it and runs it beside the agents of the
// agent file. Its tools carry their rules.
func ExampleAgent() {
	model, err := baton.Script([]byte(`{"steps":[{"text":"All systems nominal."}]}`))
	if err != nil {
		log.Fatal(err)
	}
	restart := baton.Func("restart", "Restart a service.",
		func(ctx context.Context, in struct {
			Service string `json:"service"`
		}) (string, error) {
			return "restarted " + in.Service, nil
		},
		baton.Write(), baton.NeedsApproval(baton.PathPrefix("service", "/prod")))

	agent := baton.Agent{
		Name:   "ops",
		Model:  model,
		System: "You keep the fleet healthy.",
		Tools:  []baton.Tool{restart},
		Limits: baton.Limits{MaxStepsPerTurn: 20},
	}
	cfg := host.Config{Agents: []baton.Agent{agent}} // host.Main(host.ResumeFunction, cfg) in a main
	for _, t := range cfg.Agents[0].Tools {
		fmt.Println(t.Name, t.Effect, t.Approval(json.RawMessage(`{"service":"/prod/api"}`)))
	}
	// Output:
	// restart write true
}

// An agent that uses the tools of a remote MCP server. Only the allowed
// tools are offered, and their annotations set their rules; the agent's
// Approvals override them. A turn lists the allowed tools when it starts
// (the resume function's Config.MCP reaches the server), and offers that
// list for the rest of the turn; checking the agent does not reach the
// server.
func ExampleMCPServer() {
	model, err := baton.Script([]byte(`{"steps":[{"text":"Nothing to do."}]}`))
	if err != nil {
		log.Fatal(err)
	}
	files := baton.Agent{
		Name:  "files",
		Model: model,
		MCP: []baton.MCPServer{{
			Name: "files",
			URL:  "https://files.example.com/mcp",
			// Header values come from the environment.
			HeaderEnv: map[string]string{"Authorization": "FILES_MCP_TOKEN"},
			Allow:     []string{"lookup", "set_flag", "delete_file"},
			// A call of set_flag claims the flag it names, for writing.
			Claims: map[string][]baton.ClaimDecl{"set_flag": {{Namespace: "flags", Field: "name", Access: baton.AccessWrite}}},
		}},
		Approvals: map[string]baton.Rule{"set_flag": baton.Always()},
	}
	cfg := host.Config{Agents: []baton.Agent{files}, MCP: providers.MCP()} // baton's MCP client
	fmt.Println(len(cfg.Agents[0].MCP[0].Allow), "tools allowed")
	// Output:
	// 3 tools allowed
}

// shouter is a Model of one's own, written with this package alone. On a
// user's message it calls the shout tool with the message's text; once the
// tool's result is in (Request.Results), it answers with it. The provider
// ids it gives its calls come back as the results' ToolCallID.
type shouter struct{}

func (shouter) Stream(ctx context.Context, req baton.Request) iter.Seq2[baton.Event, error] {
	return func(yield func(baton.Event, error) bool) {
		if err := ctx.Err(); err != nil {
			// A classified error tells the runner what to do: this one is
			// transient, so the step is redone or the turn suspended.
			yield(baton.Event{}, &baton.ModelError{Kind: baton.ModelInterrupted, Err: err})
			return
		}
		usage := baton.Usage{InputTokens: 10, OutputTokens: 3}
		if results := req.Results(); len(results) > 0 {
			for _, r := range results {
				if !yield(baton.Event{Type: baton.TextDelta, Text: fmt.Sprintf("step %d: %s says %s", req.Step, r.ToolName, r.Output)}, nil) {
					return
				}
			}
			yield(baton.Event{Type: baton.Finish, Stop: baton.StopEnd, Usage: usage}, nil)
			return
		}
		input, err := json.Marshal(map[string]string{"text": req.LastUserText()})
		if err != nil {
			yield(baton.Event{}, &baton.ModelError{Kind: baton.ModelBadOutput, Err: err})
			return
		}
		call := baton.ModelCall{ID: fmt.Sprintf("shout-%d", req.Step), Name: "shout", Input: input}
		if !yield(baton.Event{Type: baton.ToolCall, Call: call}, nil) {
			return
		}
		yield(baton.Event{Type: baton.Finish, Stop: baton.StopToolCalls, Usage: usage}, nil)
	}
}

// A Model of one's own plugs into an agent like any provider's, and needs
// no package but baton: Request, Message, Content and their helpers say
// where the turn stands; ModelError classifies what went wrong. Here two
// steps are played by hand, as the runner would play them.
func ExampleModel() {
	var m baton.Model = shouter{}
	user := baton.Message{Role: baton.RoleUser, Content: []baton.Content{{Type: baton.ContentText, Text: "hello"}}}
	step := func(req baton.Request) []baton.Event {
		var evs []baton.Event
		for ev, err := range m.Stream(context.Background(), req) {
			if err != nil {
				fmt.Println("error:", baton.ModelErrorKindOf(err))
				return nil
			}
			evs = append(evs, ev)
		}
		return evs
	}

	first := step(baton.Request{Step: 1, Messages: []baton.Message{user}})
	call := first[0].Call
	fmt.Println(call.Name, string(call.Input), first[1].Stop)

	// The runner runs the tool and gives its result back.
	second := step(baton.Request{Step: 2, Messages: []baton.Message{
		user,
		{Role: baton.RoleAssistant, Content: []baton.Content{{Type: baton.ContentToolCall, ToolCallID: call.ID, ToolName: call.Name, Input: call.Input}}},
		{Role: baton.RoleTool, Content: []baton.Content{{Type: baton.ContentToolResult, ToolCallID: call.ID, ToolName: call.Name, Output: json.RawMessage(`"HELLO"`)}}},
	}})
	fmt.Println(second[0].Text, second[1].Stop)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, err := range m.Stream(ctx, baton.Request{}) {
		fmt.Println("cancelled:", baton.ModelErrorKindOf(err))
	}
	// Output:
	// shout {"text":"hello"} tool-calls
	// step 2: shout says "HELLO" stop
	// cancelled: interrupted
}

// A typed approval predicate: a refund outside 10 to 100 waits for an
// operator. The predicate sees the input as the tool would; one that
// panics, or input it cannot decode, asks.
func ExampleWhen() {
	type refund struct {
		Order  string `json:"order"`
		Amount int    `json:"amount"`
	}
	tool := baton.Func("refund", "Refund an order.",
		func(ctx context.Context, in refund) (string, error) { return "refunded", nil },
		baton.External(), baton.NeedsApproval(baton.When(func(in refund) bool { return in.Amount < 10 || in.Amount > 100 })))
	for _, in := range []string{`{"order":"A","amount":5}`, `{"order":"A","amount":50}`, `{"order":"A","amount":500}`} {
		fmt.Println(in, tool.Approval(json.RawMessage(in)))
	}
	// Output:
	// {"order":"A","amount":5} true
	// {"order":"A","amount":50} false
	// {"order":"A","amount":500} true
}

// A tool that reads its call (CallOf), retries transient errors within its
// one execution (Retry), is bounded in time (Timeout), and tells the runner
// what an error means: Transient, ForModel or Fatal.
func ExampleCallOf() {
	busy := true
	charge := baton.Func("charge", "Charge a card.",
		func(ctx context.Context, in struct {
			Cents int `json:"cents"`
		}) (string, error) {
			call, _ := baton.CallOf(ctx)
			switch {
			case in.Cents <= 0:
				return "", baton.ForModel(errors.New("the amount must be positive"))
			case busy:
				busy = false // nothing was charged: safe to try again
				return "", baton.Transient(errors.New("the gateway is busy"))
			}
			return fmt.Sprintf("charged %d on try %d with key %s", in.Cents, call.Try, call.IdempotencyKey), nil
		},
		baton.External(), baton.Timeout(10*time.Second), baton.Retry(3, 100*time.Millisecond, time.Second))
	fmt.Println(charge.Timeout, charge.Retry.Attempts)
	// Output:
	// 10s 3
}

// A guardrail that redacts card numbers from what the model sees, and one
// that blocks an answer naming a door code.
func ExampleGuardrail() {
	card := regexp.MustCompile(`\b\d{4}[ -]?\d{4}[ -]?\d{4}[ -]?\d{4}\b`)
	noCards := baton.Guardrail{Name: "no-cards", Stage: baton.OnInput,
		Check: func(_ context.Context, s baton.GuardSubject) (baton.GuardDecision, error) {
			if card.MatchString(s.Text) {
				return baton.Redact(card.ReplaceAllString(s.Text, "[card]"), "a card number"), nil
			}
			return baton.Allow(), nil
		}}
	noCodes := baton.Guardrail{Name: "no-door-codes", Stage: baton.OnOutput,
		Check: func(_ context.Context, s baton.GuardSubject) (baton.GuardDecision, error) {
			if strings.Contains(s.Text, "door code") {
				return baton.Block("That answer was withheld."), nil
			}
			return baton.Allow(), nil
		}}
	d, _ := noCards.Check(context.Background(), baton.GuardSubject{Text: "charge 4111 1111 1111 1111"})
	fmt.Println(d.Action, d.Text)
	d, _ = noCodes.Check(context.Background(), baton.GuardSubject{Text: "The door code is 4711."})
	fmt.Println(d.Action, d.Reason)
	_ = baton.Agent{Name: "desk", Guardrails: []baton.Guardrail{noCards, noCodes}}
	// Output:
	// redact charge [card]
	// block That answer was withheld.
}
