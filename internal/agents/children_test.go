package agents_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/agents"
)

// TestChildrenConfig: an agent file's agent names sub-agents and hand-offs
// and their limits; the agent map's Link (which the app runs on the file's
// and the program's agents together) checks the names and adds the tools.
func TestChildrenConfig(t *testing.T) {
	m, err := loadSpend(t, scripted(`"agents":["a"],"handoffs":[],"children":"each","maxDepth":2,"maxChildren":4`))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.Agent("a")
	if c := a.Children; !c.Each || c.MaxDepth != 2 || c.MaxChildren != 4 || len(c.Agents) != 1 {
		t.Fatalf("children %+v", c)
	}
	if err := m.Link(); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Tools.Get("a"); !ok {
		t.Fatalf("no tool for the sub-agent")
	}
	m, err = loadSpend(t, scripted(`"agents":["nobody"]`))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Link(); err == nil || !strings.Contains(err.Error(), `"nobody" is not defined`) {
		t.Fatalf("link of a missing sub-agent: %v", err)
	}
}

// TestBadChildrenConfig: a children mode that is not all or each, and
// limits that are negative or past their bounds (a maxDepth or maxChildren
// of 1e9 would let a recursive agent fan out without end), are refused
// naming the field.
func TestBadChildrenConfig(t *testing.T) {
	for _, c := range []struct{ extra, field string }{
		{`"children":"some"`, "children"},
		{`"maxChildren":-1`, "maxChildren"},
		{`"maxDepth":-1`, "maxDepth"},
		{`"maxDepth":1000000000`, "maxDepth"},
		{`"maxChildren":1000000000`, "maxChildren"},
		{`"agents":["a"],"maxDepth":11`, "maxDepth"},
		{`"agents":["a"],"maxChildren":33`, "maxChildren"},
	} {
		_, err := loadSpend(t, scripted(c.extra))
		var ce *agents.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("%s: err = %v, want a ConfigError on %s", c.extra, err, c.field)
		}
	}
	if _, err := loadSpend(t, scripted(`"agents":["a"],"maxDepth":10,"maxChildren":32`)); err != nil {
		t.Errorf("the bounds themselves: %v", err)
	}
}
