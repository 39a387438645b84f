package session

import (
	"errors"
	"fmt"

	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

// This file holds the check of a snapshot read back against the fact that
// names it.

// ErrCorruptSnapshot is matched when a snapshot read back is not the one
// End wrote for the fact that names it.
var ErrCorruptSnapshot = errors.New("session: corrupt snapshot")

// checkSnapshot checks that sn, read back for fact f of session id, is what
// End writes when f ends a turn (the session's idle state just after f),
// Compact when f compacts the context, or a rewind when f rewinds (rewind.go), with a conversation of known roles
// and content.
func checkSnapshot(id string, f reducer.Fact, sn Snapshot) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrCorruptSnapshot, f.Snapshot, fmt.Sprintf(format, args...))
	}
	st := sn.State
	switch {
	case sn.Session != id:
		return bad("it is for session %q", sn.Session)
	case st.LastSeq != f.Seq:
		return bad("it is at seq %d, not %d", st.LastSeq, f.Seq)
	case st.Snapshot != f.Snapshot || st.SnapshotSeq != f.Seq:
		return bad("it names snapshot %q at %d", st.Snapshot, st.SnapshotSeq)
	case st.Agent == "":
		return bad("no agent")
	}
	if f.Type == reducer.SessionRewound {
		// A rewind's: idle, or the turn it reopened suspended.
		r := f.Rewind
		switch {
		case r == nil:
			return bad("a rewind without its point")
		case r.Turn == nil && (st.Status != reducer.Idle || st.Turn != nil):
			return bad("status %q: a rewind to a turn's edge leaves the session idle", st.Status)
		case r.Turn != nil && (st.Status != reducer.Suspended || st.Turn == nil || st.Turn.ID != r.Turn.ID):
			return bad("status %q: a rewind within a turn leaves it reopened", st.Status)
		case st.Compactions != r.Compactions:
			return bad("%d compactions, the rewind says %d", st.Compactions, r.Compactions)
		}
	} else if f.Type == reducer.ContextCompacted {
		// Compact's: the running turn's state just after f, and history
		// that starts with the summary.
		switch {
		case st.Status != reducer.Running || st.Turn == nil || st.Turn.ID != f.Turn:
			return bad("status %q: a compaction happens in the running turn %s", st.Status, f.Turn)
		case st.Compactions < 1 || len(sn.Messages) == 0 || sn.Messages[0].Role != conversation.User:
			return bad("%d compactions, %d messages: compacted history starts with the summary", st.Compactions, len(sn.Messages))
		}
	} else {
		switch {
		case !f.Ends() || st.Last != f.Type:
			return bad("its last turn ended with %q, the fact is %q", st.Last, f.Type)
		case st.Status != reducer.Idle || st.Turn != nil:
			return bad("status %q, open turn %v: a turn's end leaves the session idle", st.Status, st.Turn != nil)
		case st.Turns < 1:
			return bad("%d turns ended", st.Turns)
		}
	}
	for i, m := range st.Inbox {
		if m.ID == "" {
			return bad("inbox message %d has no id", i)
		}
	}
	for i, m := range sn.Messages {
		switch m.Role {
		case conversation.User, conversation.Assistant, conversation.ToolRole:
		default:
			return bad("message %d has role %q", i, m.Role)
		}
		for j, c := range m.Content {
			switch c.Type {
			case conversation.Text, conversation.Reasoning, conversation.ToolCall, conversation.ToolResult:
			case conversation.File:
				if c.File == nil || c.File.SHA256 == "" {
					return bad("message %d, content %d is a file without its reference", i, j)
				}
			default:
				return bad("message %d, content %d has type %q", i, j, c.Type)
			}
		}
	}
	return nil
}
