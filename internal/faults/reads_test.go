package faults_test

import (
	"net/http"
	"testing"

	"github.com/baton-run/baton/internal/faults"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// TestResumeRetriesACutShortRead cuts short the answer to the first
// DynamoDB Query of a resume (the read of the session's facts): the read is
// sent again within the same invocation, and the turn resumes and
// completes, instead of failing the invocation for SQS to redeliver.
func TestResumeRetriesACutShortRead(t *testing.T) {
	s := newStack(t, hello, turn.Limits{})
	id := s.awaitingApproval(t)
	if code, body := s.do(http.MethodPost, "/sessions/"+id+"/approvals/ap1", `{"decision":"approve"}`); code != http.StatusAccepted {
		t.Fatalf("approve: %d %s", code, body)
	}
	s.ft.Set(faults.Rule{Op: "dynamodb:Query", Times: 1, Fault: faults.CutShort})
	out, err := s.runner.Resume(t.Context(), id)
	s.ft.Set()
	if n := s.ft.Count("dynamodb:Query"); n != 1 {
		t.Fatalf("%d faults injected, want 1", n)
	}
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("resume with a read cut short: %+v, %v; want it completed in this invocation", out, err)
	}
	if f := last(s.facts(t, id)); f.Type != reducer.TurnCompleted {
		t.Fatalf("last fact %s, want %s", f.Type, reducer.TurnCompleted)
	}
}
