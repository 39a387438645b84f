package provider

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/pkg/conversation"
)

// alternate renders Alternate's messages as "role:block,block" strings, a
// block being the content's text.
func alternate(msgs []conversation.Message) ([]string, error) {
	block := func(i int, c conversation.Content) (string, error) {
		if c.Text == "bad" {
			return "", fmt.Errorf("message %d: bad block", i)
		}
		return c.Text, nil
	}
	message := func(role string, blocks []string) string { return role + ":" + strings.Join(blocks, ",") }
	return Alternate(msgs, block, "user", "assistant", message)
}

func text(role conversation.Role, texts ...string) conversation.Message {
	m := conversation.Message{Role: role}
	for _, t := range texts {
		m.Content = append(m.Content, conversation.Content{Type: conversation.Text, Text: t})
	}
	return m
}

func reasoning(role conversation.Role, text, signature string) conversation.Message {
	return conversation.Message{Role: role, Content: []conversation.Content{{Type: conversation.Reasoning, Text: text, Signature: signature}}}
}

// TestAlternate: blocks keep their order; empty text, unsigned reasoning and
// reasoning outside an assistant message are dropped, and so are the
// messages left empty; consecutive messages of one side (a tool message is
// on the user's) are merged, also across a dropped message of the other
// side.
func TestAlternate(t *testing.T) {
	call := conversation.Message{Role: conversation.Assistant, Content: []conversation.Content{{Type: conversation.ToolCall, ToolCallID: "c1", Text: "call"}}}
	result := conversation.Message{Role: conversation.ToolRole, Content: []conversation.Content{{Type: conversation.ToolResult, ToolCallID: "c1", Text: "result"}}}
	got, err := alternate([]conversation.Message{
		text(conversation.User, "a", "", "b"),
		text(conversation.User, "c"),
		text(conversation.Assistant, ""),
		text(conversation.User, "d"),
		text(conversation.Assistant, "e"),
		reasoning(conversation.Assistant, "unsigned", ""),
		reasoning(conversation.Assistant, "signed", "sig"),
		call,
		result,
		text(conversation.User, "f"),
		reasoning(conversation.User, "user's", "sig"),
		text(conversation.Assistant),
	})
	want := []string{"user:a,b,c,d", "assistant:e,signed,call", "user:result,f"}
	if err != nil || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("Alternate = %q, %v; want %q", got, err, want)
	}
	if got, err := alternate(nil); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Alternate(nil) = %#v, %v; want no messages", got, err)
	}
}

// TestAlternateErrors: a block's error is returned as is, and a
// conversation whose tool calls do not pair up is rejected before any block
// is mapped.
func TestAlternateErrors(t *testing.T) {
	if _, err := alternate([]conversation.Message{text(conversation.User, "a", "bad")}); err == nil || err.Error() != "message 0: bad block" {
		t.Fatalf("bad block: %v, want the block's error", err)
	}
	dangling := conversation.Message{Role: conversation.Assistant, Content: []conversation.Content{
		{Type: conversation.Text, Text: "bad"}, {Type: conversation.ToolCall, ToolCallID: "c1"},
	}}
	_, err := alternate([]conversation.Message{dangling})
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.InvalidRequest || !strings.Contains(err.Error(), "has no result") {
		t.Fatalf("dangling call: %v, want CheckToolPairing's InvalidRequest", err)
	}
}
