package dynamo

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/pkg/reducer"
)

// rawHead reads the head item itself, to see which attributes it holds.
func rawHead(t *testing.T, store *Store, session string) map[string]types.AttributeValue {
	t.Helper()
	out, err := store.client.GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName:      aws.String(store.table),
		Key:            map[string]types.AttributeValue{attrPK: str(session), attrSK: num(0)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func TestHeadFollowsState(t *testing.T) {
	store := sharedStore()
	owner := ids.New("owner")
	s := newSession(t, store, owner, t0)

	check := func(step string, status reducer.Status, turn string, cause reducer.Cause, due time.Time, why reducer.Reason) {
		t.Helper()
		h, err := store.Head(t.Context(), s.id)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		want := Head{Session: s.id, Agent: "helper", Owner: owner, Status: status, LastSeq: s.st.LastSeq,
			Created: t0, Updated: s.st.Updated, Turn: turn, Cause: cause, Due: due, Why: why}
		if h != want {
			t.Fatalf("%s: head\n got %+v\nwant %+v", step, h, want)
		}
		raw := rawHead(t, store, s.id)
		for _, a := range []string{attrDueShard, attrDue, attrWhy} {
			if _, has := raw[a]; has != (why != "") {
				t.Errorf("%s: head has %s = %v, want it only while due", step, a, has)
			}
		}
		if _, has := raw[attrTurn]; has != (turn != "") {
			t.Errorf("%s: head has %s = %v, want it only with an open turn", step, attrTurn, has)
		}
		if _, has := raw[attrCause]; has != (cause != "") {
			t.Errorf("%s: head has %s = %v, want it only while suspended", step, attrCause, has)
		}
	}

	check("created", reducer.Idle, "", "", time.Time{}, "")
	s.message("hi")
	check("message waiting", reducer.Idle, "", "", s.st.Updated, "inbox")
	s.start()
	lease := s.st.Turn.Lease
	check("running", reducer.Running, s.turn, "", lease, "lease")
	s.append(reducer.Fact{Type: reducer.TurnSuspended, Turn: s.turn, Cause: reducer.CauseBudget})
	check("suspended for budget", reducer.Suspended, s.turn, reducer.CauseBudget, s.st.Turn.Since, "wake")
	s.append(reducer.Fact{Type: reducer.TurnResumed, Turn: s.turn, Lease: s.now.Add(10 * time.Minute)})
	expires := s.now.Add(2 * time.Hour).Add(123 * time.Millisecond)
	s.append(
		reducer.Fact{Type: reducer.ApprovalRequested, Turn: s.turn, Approval: &reducer.Approval{
			ID: "ap", ToolCallID: "call", Tool: "deploy", Input: []byte(`{}`), Expires: expires}},
		reducer.Fact{Type: reducer.TurnSuspended, Turn: s.turn, Cause: reducer.CauseApproval},
	)
	check("suspended for approval", reducer.Suspended, s.turn, reducer.CauseApproval, expires, "approval")
	s.append(reducer.Fact{Type: reducer.TurnCancelled, Turn: s.turn, Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: "op"}})
	check("cancelled", reducer.Idle, "", "", time.Time{}, "")

	if _, err := store.Head(t.Context(), ids.New("s")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("head of an unknown session: %v, want ErrNotFound", err)
	}
}

func TestByOwnerNewestFirstPaged(t *testing.T) {
	store := sharedStore()
	owner, other := ids.New("owner"), ids.New("owner")
	var want []string // newest first
	for i := range 5 {
		s := newSession(t, store, owner, t0.Add(time.Duration(i)*time.Minute))
		want = slices.Insert(want, 0, s.id)
		newSession(t, store, other, t0.Add(time.Duration(i)*time.Minute+time.Second))
	}
	// A session without an owner is listed under none.
	(&session{t: t, store: store, id: ids.New("s"), now: t0}).append(reducer.Fact{Type: reducer.SessionCreated,
		Agent: "helper", Actor: reducer.Actor{Kind: reducer.ActorSystem, ID: "tick"}})

	var got []string
	var pages int
	cursor := ""
	for {
		heads, next, err := store.ByOwner(t.Context(), owner, 2, cursor)
		if err != nil {
			t.Fatal(err)
		}
		if len(heads) > 2 {
			t.Fatalf("page of %d heads, limit 2", len(heads))
		}
		for _, h := range heads {
			if h.Owner != owner || h.Status != reducer.Idle || h.LastSeq != 1 {
				t.Errorf("unexpected head %+v", h)
			}
			got = append(got, h.Session)
		}
		pages++
		if next == "" {
			break
		}
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		cursor = next
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ByOwner = %v, want %v", got, want)
	}
	if pages < 3 {
		t.Errorf("5 sessions at 2 a page came in %d pages", pages)
	}

	all, next, err := store.ByOwner(t.Context(), owner, 0, "")
	if err != nil || next != "" || len(all) != 5 {
		t.Fatalf("ByOwner with the default limit: %d heads, cursor %q, %v", len(all), next, err)
	}
	if none, _, err := store.ByOwner(t.Context(), ids.New("owner"), 10, ""); err != nil || len(none) != 0 {
		t.Fatalf("ByOwner of an unknown owner: %v, %v", none, err)
	}
}

// Creation times that differ below the second still list newest first:
// RFC 3339 with trimmed zeros ("05Z" vs "05.1Z") would not sort.
func TestByOwnerOrdersSubsecondCreationTimes(t *testing.T) {
	store := sharedStore()
	owner := ids.New("owner")
	whole := newSession(t, store, owner, t0)
	tenth := newSession(t, store, owner, t0.Add(100*time.Millisecond))
	nano := newSession(t, store, owner, t0.Add(100*time.Millisecond+time.Nanosecond))
	heads, _, err := store.ByOwner(t.Context(), owner, 10, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range heads {
		got = append(got, h.Session)
	}
	if want := []string{nano.id, tenth.id, whole.id}; !slices.Equal(got, want) {
		t.Fatalf("ByOwner = %v, want %v", got, want)
	}
	if !heads[0].Created.Equal(t0.Add(100*time.Millisecond + time.Nanosecond)) {
		t.Errorf("created = %v", heads[0].Created)
	}
}

func TestDueOldestFirstPaged(t *testing.T) {
	store := ownTable(t) // Due lists the whole table
	owner := ids.New("owner")
	now := t0.Add(24 * time.Hour)

	// Sessions due at distinct times, oldest first in want.
	running := newSession(t, store, owner, t0)
	running.message("a")
	running.now = now.Add(-50 * time.Minute)
	running.start() // lease now-35m

	budget := newSession(t, store, owner, t0.Add(time.Second))
	budget.message("b")
	budget.start()
	budget.now = now.Add(-40 * time.Minute)
	budget.append(reducer.Fact{Type: reducer.TurnSuspended, Turn: budget.turn, Cause: reducer.CauseBudget}) // due now-40m

	inbox := newSession(t, store, owner, t0.Add(2*time.Second))
	inbox.now = now.Add(-time.Minute)
	inbox.message("c") // due now-1m

	// Not due: idle with nothing waiting, due in the future, and a session
	// that was due and is no longer.
	newSession(t, store, owner, t0.Add(3*time.Second))
	future := newSession(t, store, owner, t0.Add(4*time.Second))
	future.message("d")
	future.now = now
	future.start() // lease now+15m
	done := newSession(t, store, owner, t0.Add(5*time.Second))
	done.message("e")
	done.start()
	done.complete("snap")

	want := []string{budget.id, running.id, inbox.id}
	wantWhy := []reducer.Reason{"wake", "lease", "inbox"}
	heads := allDue(t, store, now, 1)
	var got []string
	var why []reducer.Reason
	var dues []time.Time
	for _, h := range heads {
		got, why, dues = append(got, h.Session), append(why, h.Why), append(dues, h.Due)
	}
	if !slices.Equal(got, want) || !slices.Equal(why, wantWhy) {
		t.Fatalf("Due = %v %v, want %v %v", got, why, want, wantWhy)
	}
	if !dues[0].Equal(now.Add(-40*time.Minute)) || !dues[1].Equal(now.Add(-35*time.Minute)) || !dues[2].Equal(now.Add(-time.Minute)) {
		t.Errorf("due times %v", dues)
	}

	if later := allDue(t, store, now.Add(time.Hour), 10); len(later) != 4 || later[3].Session != future.id {
		t.Fatalf("Due an hour later: %d heads, want 4 ending with the future lease", len(later))
	}
}

// allDue reads every shard's due heads with Due, checking that each shard
// lists only its own sessions, oldest first, and returns them all, each
// once, oldest first.
func allDue(t *testing.T, store *Store, before time.Time, limit int32) []Head {
	t.Helper()
	seen := map[string]bool{}
	var all []Head
	for shard := range DueShards {
		var last time.Time
		pages, err := store.Due(t.Context(), shard, before, limit, func(h Head) error {
			if DueShardOf(h.Session) != shard {
				return fmt.Errorf("shard %d lists %s of shard %d", shard, h.Session, DueShardOf(h.Session))
			}
			if h.Due.Before(last) {
				return fmt.Errorf("shard %d lists %s due %v after one due %v", shard, h.Session, h.Due, last)
			}
			last = h.Due
			if !seen[h.Session] {
				seen[h.Session] = true
				all = append(all, h)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if pages > 10 {
			t.Fatalf("shard %d: %d pages", shard, pages)
		}
	}
	slices.SortStableFunc(all, func(a, b Head) int { return a.Due.Compare(b.Due) })
	return all
}

func TestListingsRefuseBadCursors(t *testing.T) {
	store := sharedStore()
	owner := ids.New("owner")
	for i := range 3 {
		newSession(t, store, owner, t0.Add(time.Duration(i)*time.Second))
	}
	_, ownerCursor, err := store.ByOwner(t.Context(), owner, 1, "")
	if err != nil || ownerCursor == "" {
		t.Fatalf("first page: cursor %q, %v", ownerCursor, err)
	}
	// The cursor works for its own listing...
	if _, _, err := store.ByOwner(t.Context(), owner, 1, ownerCursor); err != nil {
		t.Fatalf("second page: %v", err)
	}
	// ...and nowhere else.
	for name, c := range map[string]string{
		"garbage":       "!!!",
		"not json":      base64.RawURLEncoding.EncodeToString([]byte("hello")),
		"wrong types":   base64.RawURLEncoding.EncodeToString([]byte(`{"pk":{"N":"1"},"sk":{"N":"1"}}`)),
		"no sort key":   base64.RawURLEncoding.EncodeToString([]byte(`{"pk":{"S":"s"},"owner":{"S":"o"},"created":{"S":"c"},"dueShard":{"S":"due"},"due":{"N":"1"}}`)),
		"bad number":    base64.RawURLEncoding.EncodeToString([]byte(`{"pk":{"S":"s"},"sk":{"N":"x"},"dueShard":{"S":"due"},"due":{"N":"1"}}`)),
		"foreign owner": ownerCursor,
	} {
		if _, _, err := store.ByOwner(t.Context(), ids.New("owner"), 1, c); name != "foreign owner" && !errors.Is(err, ErrBadCursor) {
			t.Errorf("ByOwner with %s cursor: %v, want ErrBadCursor", name, err)
		}
	}
	if _, _, err := store.ByOwner(t.Context(), "someone-else", 1, ownerCursor); !errors.Is(err, ErrBadCursor) {
		t.Errorf("ByOwner with another owner's cursor: %v, want ErrBadCursor", err)
	}
	if _, _, err := store.ByOwner(t.Context(), owner, -1, ""); err == nil {
		t.Error("ByOwner accepted a negative limit")
	}
}
