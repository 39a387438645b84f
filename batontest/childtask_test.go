package batontest_test

import (
	"strings"
	"testing"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/pkg/reducer"
)

// TestChildTaskIsCheckedAsAMessage: a child's task is its first message,
// so the one message check applies to it: a blank task and one over 100
// KiB each get an error result the model sees, and start no child; a task
// at the limit starts one.
func TestChildTaskIsCheckedAsAMessage(t *testing.T) {
	kit := batontest.New(t, host.Config{Agents: []baton.Agent{
		{Name: "desk", Model: asker([2]string{"fraud", " \n "}, [2]string{"fraud", strings.Repeat("x", reducer.MaxText+1)},
			[2]string{"fraud", strings.Repeat("y", reducer.MaxText)}),
			Children: baton.Children{Agents: []string{"fraud"}}},
		{Name: "fraud", Model: answerer},
	}})
	p := kit.Session("desk")
	p.Post("Check.")
	p.RunAlone() // the child waits with its task, to be seen
	if kids := p.Children(); len(kids) != 1 || len(kids[0].State().Inbox) != 1 || len(kids[0].State().Inbox[0].Text) != reducer.MaxText {
		t.Fatalf("%d children started, want 1, with the task at the limit", len(kids))
	}
	calls := p.ToolCalls()
	for i, want := range []string{"must not be blank", "longer than the 102400 allowed"} {
		if c := calls[i]; !strings.Contains(c.Error, "task is") || !strings.Contains(c.Error, want) {
			t.Errorf("call %d: error %q, want one saying the task %s", i, c.Error, want)
		}
	}
}
