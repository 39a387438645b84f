package spawn_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/turn"
)

// TestLinkRefusesBadChildren: the one agent check of sub-agents and
// hand-offs refuses names that are not agents, a hand-off to itself,
// negative limits and a tool name already taken, naming the agent; a good
// config gets one tool per sub-agent and per hand-off, once however often
// it is linked.
func TestLinkRefusesBadChildren(t *testing.T) {
	t.Parallel()
	own := func(names ...string) *tool.Registry {
		var ts []tool.Tool
		for _, n := range names {
			ts = append(ts, tool.Tool{Name: n, Run: func(context.Context, tool.Call) (json.RawMessage, error) { return nil, nil }})
		}
		r, err := tool.NewRegistry(ts...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, c := range []struct {
		name string
		a    turn.Children
		tool string
		want string
	}{
		{"missing agent", turn.Children{Agents: []string{"ghost"}}, "", `agent "ghost" is not defined`},
		{"missing hand-off", turn.Children{Handoffs: []string{"ghost"}}, "", `agent "ghost" is not defined`},
		{"self hand-off", turn.Children{Handoffs: []string{"desk"}}, "", "itself"},
		{"negative", turn.Children{Agents: []string{"fraud"}, MaxDepth: -1}, "", "negative"},
		{"taken", turn.Children{Agents: []string{"fraud"}}, "fraud", "registered twice"},
		{"bad name", turn.Children{Agents: []string{"fraud agent"}}, "", "tool's name"},
	} {
		m := turn.AgentMap{"desk": {Name: "desk", Children: c.a}, "fraud": {Name: "fraud"}, "fraud agent": {Name: "fraud agent"}}
		if c.tool != "" {
			m["desk"].Tools = own(c.tool)
		}
		err := m.Link()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `agent "desk"`) {
			t.Errorf("%s: %v, want an error naming desk and %q", c.name, err, c.want)
		}
	}
	m := turn.AgentMap{"desk": {Name: "desk", Tools: own("look"), Children: turn.Children{Agents: []string{"fraud"}, Handoffs: []string{"fraud"}}},
		"fraud": {Name: "fraud"}}
	for range 2 {
		if err := m.Link(); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, s := range m["desk"].Tools.Specs() {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "look,fraud,handoff_to_fraud" {
		t.Fatalf("desk's tools %s", got)
	}
}
