package conversation_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/baton-run/baton/pkg/conversation"
)

func msg(role conversation.Role, text string) conversation.Message {
	return conversation.Message{Role: role, Content: []conversation.Content{{Type: conversation.Text, Text: text}}}
}

func TestCut(t *testing.T) {
	u, a := conversation.User, conversation.Assistant
	tool := conversation.Message{Role: conversation.ToolRole, Content: []conversation.Content{{Type: conversation.ToolResult, ToolName: "x", Output: json.RawMessage(`"ok"`)}}}
	// Three turns: u a | u a tool a | u a
	h := []conversation.Message{msg(u, "1"), msg(a, "1"), msg(u, "2"), msg(a, "2"), tool, msg(a, "2b"), msg(u, "3"), msg(a, "3")}
	for _, c := range []struct {
		name             string
		history          []conversation.Message
		summarized       bool
		keep, cut, turns int
	}{
		{"keep two", h, false, 2, 2, 1},
		{"keep one", h, false, 1, 6, 2},
		{"keep none", h, false, 0, 8, 3},
		{"keep all", h, false, 3, 0, 0},
		{"keep more than there are", h, false, 5, 0, 0},
		{"summary and two turns, keep two", append([]conversation.Message{conversation.Summary("s")}, h[2:]...), true, 2, 0, 0},
		{"summary and three turns, keep two", append([]conversation.Message{conversation.Summary("s")}, h...), true, 2, 3, 2},
		{"empty", nil, false, 0, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			cut, turns := conversation.Cut(c.history, c.summarized, c.keep)
			if cut != c.cut || turns != c.turns {
				t.Fatalf("Cut = %d, %d; want %d, %d", cut, turns, c.cut, c.turns)
			}
			if cut > 0 && cut < len(c.history) && c.history[cut].Role != u {
				t.Fatalf("the kept part starts with a %s message", c.history[cut].Role)
			}
		})
	}
}

func TestTranscript(t *testing.T) {
	h := []conversation.Message{
		conversation.Summary("earlier: the user asked for Rome"),
		msg(conversation.User, "and Lima?"),
		{Role: conversation.Assistant, Content: []conversation.Content{
			{Type: conversation.Reasoning, Text: "secret thoughts"},
			{Type: conversation.ToolCall, ToolName: "get_weather", Input: json.RawMessage(`{"city":"Lima"}`)},
		}},
		{Role: conversation.ToolRole, Content: []conversation.Content{{Type: conversation.ToolResult, ToolName: "get_weather", Output: json.RawMessage(`"18C"`)}}},
	}
	got := conversation.Transcript(h)
	for _, want := range []string{"[summary of what came before]\nearlier: the user asked for Rome", "[user]\nand Lima?",
		"[assistant called get_weather]\n{\"city\":\"Lima\"}", "[get_weather returned]\n18C"} {
		if !strings.Contains(got, want) {
			t.Errorf("transcript lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "secret thoughts") || strings.Contains(got, conversation.SummaryPrefix) {
		t.Errorf("transcript carries reasoning or the summary prefix:\n%s", got)
	}
}
