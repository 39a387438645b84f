package conversation

import (
	"encoding/json"
	"fmt"
	"strings"
)

// SummaryPrefix starts the user message that holds a compaction's summary
// at the head of compacted history.
const SummaryPrefix = "Summary of the earlier conversation (it was compacted; the turns after this message are verbatim):\n\n"

// Summary is the message a compaction's summary text becomes: the first
// message of the compacted history.
func Summary(text string) Message {
	return Message{Role: User, Content: []Content{{Type: Text, Text: SummaryPrefix + text}}}
}

// Cut says how much of history a compaction keeping the last keep turns
// would replace: the messages before cut, which hold turns turns (a
// summary at the head, when summarized, counting as one). A turn starts at
// a user message. It returns 0, 0 when there is nothing to replace: fewer
// turns than keep, or only the summary.
func Cut(history []Message, summarized bool, keep int) (cut, turns int) {
	var starts []int
	for i, m := range history {
		if m.Role == User {
			starts = append(starts, i)
		}
	}
	keep = max(keep, 0)
	if len(starts) <= keep || len(starts) == 0 {
		return 0, 0
	}
	cut, turns = len(history), len(starts)-keep
	if keep > 0 {
		cut = starts[len(starts)-keep]
	}
	if summarized && turns == 1 {
		return 0, 0 // only the summary: nothing new to fold in
	}
	return cut, turns
}

// Transcript renders messages as plain text for a summariser: one line
// (or block) per text, tool call and tool result, reasoning left out. A
// summary at the head reads as one.
func Transcript(msgs []Message) string {
	var b strings.Builder
	for _, m := range msgs {
		for _, c := range m.Content {
			switch c.Type {
			case Text:
				if m.Role == User && strings.HasPrefix(c.Text, SummaryPrefix) {
					b.WriteString("[summary of what came before]\n" + strings.TrimPrefix(c.Text, SummaryPrefix))
				} else {
					b.WriteString("[" + string(m.Role) + "]\n" + c.Text)
				}
			case ToolCall:
				b.WriteString("[assistant called " + c.ToolName + "]\n" + string(c.Input))
			case ToolResult:
				verb := "returned"
				if c.IsError {
					verb = "failed"
				}
				out := string(c.Output)
				var s string
				if json.Unmarshal(c.Output, &s) == nil {
					out = s
				}
				b.WriteString("[" + c.ToolName + " " + verb + "]\n" + out)
			case File:
				// The summary names a file; its bytes are not summarised.
				if c.File == nil {
					continue
				}
				b.WriteString(fmt.Sprintf("[%s attached %q: %s, %d bytes]", m.Role, c.File.Name, c.File.MediaType, c.File.Size))
			default:
				continue
			}
			b.WriteString("\n\n")
		}
	}
	return b.String()
}
