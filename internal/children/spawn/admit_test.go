package spawn_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/children/spawn"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

// fakeTurn is an invocation as spawn.Turn sees it, recording what is
// emitted; it accepts every call's input.
type fakeTurn struct {
	st      reducer.State
	kids    baton.Children
	emitted []parts.Part
}

func (f *fakeTurn) Session() string                               { return "s1" }
func (f *fakeTurn) TurnID() string                                { return "t1" }
func (f *fakeTurn) State() reducer.State                          { return f.st }
func (f *fakeTurn) Children() baton.Children                      { return f.kids }
func (f *fakeTurn) Check(string, json.RawMessage) error           { return nil }
func (f *fakeTurn) MaxToolOutput() int                            { return 1 << 10 }
func (f *fakeTurn) Emit(ps ...parts.Part)                         { f.emitted = append(f.emitted, ps...) }
func (f *fakeTurn) Parts() []parts.Part                           { return f.emitted }
func (f *fakeTurn) Flush(context.Context) error                   { return nil }
func (f *fakeTurn) Append(context.Context, ...reducer.Fact) error { return nil }
func (f *fakeTurn) HandOff(string) (func(), bool)                 { return func() {}, true }
func (f *fakeTurn) Log() *slog.Logger                             { return slog.New(slog.DiscardHandler) }

// TestAdmitSortsTheStepsSubAgentCalls: over the runner's port alone, Admit
// takes a sub-agent's call as a child to start, a second hand-off in a
// step as an error result, a call past the depth limit as an error result,
// and leaves other tools' calls to the ledger.
func TestAdmitSortsTheStepsSubAgentCalls(t *testing.T) {
	t.Parallel()
	call := func(id, name string) *conversation.Call {
		return &conversation.Call{ID: id, Name: name, Input: json.RawMessage(`{"task":"check"}`)}
	}
	ft := &fakeTurn{kids: baton.Children{Agents: []string{"fraud"}, Handoffs: []string{"billing", "sales"}}}
	k := spawn.New(ft, nil)
	turn := &reducer.Turn{ID: "t1"}
	if k.Admit(call("c0", "lookup"), turn) || k.Active() {
		t.Fatal("a plain tool's call was taken as a sub-agent's")
	}
	if !k.Admit(call("c1", "fraud"), turn) || !k.Active() || len(ft.emitted) != 0 {
		t.Fatalf("a sub-agent's call was not taken as a child to start: %+v", ft.emitted)
	}
	if !k.Admit(call("c2", spawn.HandoffPrefix+"billing"), turn) || !k.Admit(call("c3", spawn.HandoffPrefix+"sales"), turn) {
		t.Fatal("a hand-off was not taken")
	}
	if len(ft.emitted) != 1 || ft.emitted[0].ToolCallID != "c3" || !strings.Contains(ft.emitted[0].ErrorText, "hands off once a step") {
		t.Fatalf("a second hand-off in a step: %+v, want an error result for c3", ft.emitted)
	}
	k.Reset()
	if k.Active() {
		t.Fatal("Reset left what Admit found")
	}
	deep := &fakeTurn{kids: baton.Children{Agents: []string{"fraud"}, MaxDepth: 1},
		st: reducer.State{Parent: &reducer.Parent{Session: "p", Turn: "pt", ToolCallID: "pc", Depth: 1}}}
	k = spawn.New(deep, nil)
	if !k.Admit(call("c1", "fraud"), turn) || k.Active() {
		t.Fatal("a child past maxDepth was taken to start")
	}
	if len(deep.emitted) != 1 || !strings.Contains(deep.emitted[0].ErrorText, "past this agent's maxDepth of 1") {
		t.Fatalf("a child past maxDepth: %+v, want an error result", deep.emitted)
	}
}
