package model_test

import (
	"context"
	"testing"

	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/pkg/conversation"
)

// TestScriptedCallIDs checks the ids a scripted step gives its calls: its
// own, unique in the conversation, unless the script names one, even an
// empty or repeated one.
func TestScriptedCallIDs(t *testing.T) {
	m, err := model.ParseScript([]byte(`{"steps":[{"text":"go","toolCalls":[
		{"name":"a"},{"id":"","name":"b"},{"id":"x","name":"c"},{"id":"x","name":"d"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req := model.Request{Messages: []conversation.Message{{Role: conversation.User, Content: []conversation.Content{{Type: conversation.Text, Text: "hi"}}}}}
	var ids []string
	for ev, err := range m.Stream(context.Background(), req) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == model.ToolCall {
			ids = append(ids, ev.Call.Name+"="+ev.Call.ID)
		}
	}
	if got, want := len(ids), 4; got != want || ids[0] != "a=call_0_0" || ids[1] != "b=" || ids[2] != "c=x" || ids[3] != "d=x" {
		t.Fatalf("call ids = %q", ids)
	}
}
