package agents_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/baton-run/baton/pkg/agents"
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

func TestBadChildrenConfig(t *testing.T) {
	for _, extra := range []string{`"children":"some"`, `"maxChildren":-1`} {
		_, err := loadSpend(t, scripted(extra))
		var ce *agents.ConfigError
		if !errors.As(err, &ce) || ce.Field != "children" {
			t.Errorf("%s: err = %v, want a ConfigError on children", extra, err)
		}
	}
}
