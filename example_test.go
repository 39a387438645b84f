package baton_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/pkg/mcp/mcptest"
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

// An agent defined in Go. Build checks it and makes what the runner runs;
// a program passes it to app.NewWith (in app.Extras.Agents) to run it
// beside the agents of the agent file.
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

	agent, err := baton.Agent{
		Name:   "ops",
		Model:  model,
		System: "You keep the fleet healthy.",
		Tools:  []baton.Tool{restart},
		Limits: baton.Limits{MaxStepsPerTurn: 20},
	}.Build(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	for _, spec := range agent.Tools.Specs() {
		t, _ := agent.Tools.Get(spec.Name)
		fmt.Println(spec.Name, t.Effect, t.Approval(json.RawMessage(`{"service":"/prod/api"}`)))
	}
	// Output:
	// restart write true
}

// An agent that uses the tools of a remote MCP server. Only the allowed
// tools are offered, and their annotations set their rules; the agent's
// Approvals override them. Build does not reach the server.
func ExampleMCPServer() {
	srv := mcptest.Start() // a real MCP server over streamable HTTP
	defer srv.Close()

	model, err := baton.Script([]byte(`{"steps":[{"text":"Nothing to do."}]}`))
	if err != nil {
		log.Fatal(err)
	}
	agent, err := baton.Agent{
		Name:  "files",
		Model: model,
		MCP: []baton.MCPServer{{
			Name: "files",
			URL:  srv.URL,
			// Header values come from the environment, for example:
			// HeaderEnv: map[string]string{"Authorization": "FILES_MCP_TOKEN"},
			Allow: []string{"lookup", "set_flag", "delete_file"},
		}},
		Approvals: map[string]baton.Rule{"set_flag": baton.Always()},
	}.Build(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	// A turn lists the allowed tools when it starts, and offers that list
	// for the rest of the turn.
	listed, err := agent.Remote.List(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range agent.Remote.Tools(listed) {
		fmt.Printf("%s: %s, idempotent %v, approval %v\n", t.Name, t.Effect, t.Idempotent, t.Approval(json.RawMessage(`{}`)))
	}
	// Output:
	// lookup: read, idempotent true, approval false
	// set_flag: external, idempotent true, approval true
	// delete_file: external, idempotent false, approval true
}

// greeter is a Model of one's own: every step answers with a greeting.
type greeter struct{ name string }

func (g greeter) Stream(ctx context.Context, req baton.Request) iter.Seq2[baton.Event, error] {
	return func(yield func(baton.Event, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(baton.Event{}, err)
			return
		}
		if !yield(baton.Event{Type: baton.TextDelta, Text: "Hello from " + g.name + "."}, nil) {
			return
		}
		yield(baton.Event{Type: baton.Finish, Stop: baton.StopEnd, Usage: baton.Usage{InputTokens: 12, OutputTokens: 4}}, nil)
	}
}

// A Model of one's own plugs into an agent like any provider's. A step's
// events end with Finish; an error ends the step instead.
func ExampleModel() {
	agent, err := baton.Agent{Name: "greeter", Model: greeter{name: "baton"}}.Build(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	for ev, err := range agent.Model.Stream(context.Background(), baton.Request{System: agent.System}) {
		if err != nil {
			log.Fatal(err)
		}
		switch ev.Type {
		case baton.TextDelta:
			fmt.Println("text:", ev.Text)
		case baton.Finish:
			fmt.Println("finish:", ev.Stop, ev.Usage.OutputTokens, "tokens")
		}
	}
	// Output:
	// text: Hello from baton.
	// finish: stop 4 tokens
}
