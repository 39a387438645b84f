package provider

import "github.com/baton-run/baton/pkg/conversation"

// Alternate converts a conversation into the messages of a provider whose
// roles must alternate and whose reasoning is replayed only with its
// signature (Anthropic Messages, Bedrock Converse), once CheckToolPairing
// passes. Empty text, and reasoning that is unsigned or not the assistant's,
// are dropped; block maps each other content block c of message i to the
// provider's block. A message left with no blocks is dropped, and
// consecutive messages of one side, the assistant's or the user's (which
// carries the tool results), are merged into one, which message builds from
// the side's role (user or assistant, in the provider's spelling) and its
// blocks.
func Alternate[B, R, M any](
	msgs []conversation.Message,
	block func(i int, c conversation.Content) (B, error),
	user, assistant R,
	message func(role R, blocks []B) M,
) ([]M, error) {
	if err := CheckToolPairing(msgs); err != nil {
		return nil, err
	}
	type side struct {
		assistant bool
		blocks    []B
	}
	sides := make([]side, 0, len(msgs))
	for i, m := range msgs {
		isAssistant := m.Role == conversation.Assistant
		for _, c := range m.Content {
			if !replayed(isAssistant, c) {
				continue
			}
			b, err := block(i, c)
			if err != nil {
				return nil, err
			}
			if n := len(sides); n == 0 || sides[n-1].assistant != isAssistant {
				sides = append(sides, side{assistant: isAssistant, blocks: make([]B, 0, len(m.Content))})
			}
			last := &sides[len(sides)-1]
			last.blocks = append(last.blocks, b)
		}
	}
	out := make([]M, len(sides))
	for i, s := range sides {
		role := user
		if s.assistant {
			role = assistant
		}
		out[i] = message(role, s.blocks)
	}
	return out, nil
}

// replayed reports whether content c of a message, the assistant's or not,
// is sent back: not when it is empty text, nor reasoning without a signature
// (which cannot be replayed) or outside an assistant message.
func replayed(assistant bool, c conversation.Content) bool {
	switch c.Type {
	case conversation.Text:
		return c.Text != ""
	case conversation.Reasoning:
		return assistant && c.Signature != ""
	}
	return true
}
