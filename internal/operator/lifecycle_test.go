package operator_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/chat"
	"github.com/baton-run/baton/internal/faults"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// remains lists what of session id is left: the table's items that name
// it anywhere (its facts, head, tombstone, and receipts, whose answers
// carry its id), by pk and sk, and the bucket's objects whose key holds it.
func remains(t *testing.T, e *env, id string) (items []string, objects []string) {
	t.Helper()
	c := shared.Clients()
	in := &dynamodb.ScanInput{TableName: aws.String(shared.Table)}
	for {
		out, err := c.DynamoDB.Scan(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range out.Items {
			b, _ := json.Marshal(item)
			if strings.Contains(string(b), id) {
				pk := item["pk"].(*types.AttributeValueMemberS).Value
				sk := item["sk"].(*types.AttributeValueMemberN).Value
				items = append(items, pk+"/"+sk)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	lin := &s3.ListObjectsV2Input{Bucket: aws.String(shared.Bucket)}
	for {
		out, err := c.S3.ListObjectsV2(t.Context(), lin)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out.Contents {
			if strings.Contains(aws.ToString(o.Key), id) {
				objects = append(objects, aws.ToString(o.Key))
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		lin.ContinuationToken = out.NextContinuationToken
	}
	return items, objects
}

// seedObjects writes a closed turn stream and a snapshot for session id.
func seedObjects(t *testing.T, e *env, id string) {
	t.Helper()
	ctx := context.Background()
	k := e.store.OpenStream(id, ids.New("turn"))
	if err := k.Append(parts.Part{Type: parts.TextDelta, ID: "t", Delta: "hello"}); err != nil {
		t.Fatal(err)
	}
	if err := k.Close(ctx, streams.Completed); err != nil {
		t.Fatal(err)
	}
	if err := streams.New(shared.Clients().S3, shared.Bucket).PutSnapshot(ctx, streams.SnapshotKey(id, 1), map[string]string{"session": id}); err != nil {
		t.Fatal(err)
	}
}

// TestDeleteSessionLeavesOnlyTombstone: DELETE /sessions/{id} removes the
// session's facts, head, receipts, streams and snapshots — a Scan of the
// table and a listing of the bucket find nothing of it but its tombstone,
// which names who deleted it — and the session is then 404 to its owner
// and to anyone else; another caller cannot delete it.
func TestDeleteSessionLeavesOnlyTombstone(t *testing.T) {
	t.Parallel()
	e := newEmuEnv(t, nil)
	alice, bob := ids.New("alice"), ids.New("bob")
	var s api.Session
	e.must(http.StatusCreated, req{method: "POST", path: "/sessions", user: alice, body: `{"agent":"demo"}`,
		header: keyed(ids.New("k"))}).json(t, &s)
	e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: alice,
		body: `{"text":"hi"}`, header: keyed(ids.New("k"))})
	e.wakes()
	seedObjects(t, e, s.ID)
	if items, objects := remains(t, e, s.ID); len(items) < 4 || len(objects) < 2 {
		t.Fatalf("before delete: items %v objects %v, want facts, head and 2 receipts, a chunk and a snapshot", items, objects)
	}

	e.must(http.StatusNotFound, req{method: "DELETE", path: "/sessions/" + s.ID, user: bob})
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice})
	e.must(http.StatusNoContent, req{method: "DELETE", path: "/sessions/" + s.ID, user: alice})

	items, objects := remains(t, e, s.ID)
	if len(items) != 1 || items[0] != s.ID+"/-2" || len(objects) != 0 {
		t.Fatalf("after delete: items %v objects %v, want only the tombstone", items, objects)
	}
	tomb, err := dynamoOn(shared.Table).Tombstone(t.Context(), s.ID)
	if err != nil || tomb.By != alice || tomb.Owner != alice || tomb.At.IsZero() || !tomb.Purged {
		t.Fatalf("tombstone %+v, %v", tomb, err)
	}
	for _, user := range []string{alice, bob} {
		for _, path := range []string{"", "/facts", "/export"} {
			e.must(http.StatusNotFound, req{method: "GET", path: "/sessions/" + s.ID + path, user: user})
		}
	}
	e.must(http.StatusNotFound, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: alice, body: `{"text":"hi"}`})
	e.must(http.StatusNotFound, req{method: "DELETE", path: "/sessions/" + s.ID, user: bob})
	// The deleter's retry is answered as the delete was.
	e.must(http.StatusNoContent, req{method: "DELETE", path: "/sessions/" + s.ID, user: alice})
	var list api.List
	e.must(http.StatusOK, req{method: "GET", path: "/sessions", user: alice}).json(t, &list)
	if len(list.Sessions) != 0 {
		t.Fatalf("alice still lists %+v", list.Sessions)
	}
}

// TestDeleteRefusedWhileTurnOpen: a session with an open turn is refused
// 409 and stays whole.
func TestDeleteRefusedWhileTurnOpen(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	e.startTurn(s.ID)
	before := len(e.facts(s.ID))
	got := e.must(http.StatusConflict, req{method: "DELETE", path: "/sessions/" + s.ID, user: alice})
	if !strings.Contains(got.errorMessage(t), "open turn") {
		t.Fatalf("409 says %q", got.errorMessage(t))
	}
	if n := len(e.facts(s.ID)); n != before {
		t.Fatalf("facts %d after a refused delete, want %d", n, before)
	}
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice})
}

// TestExportBundlesFactsAndStreams: GET /sessions/{id}/export answers
// every fact and every turn stream's parts; another caller gets 404.
func TestExportBundlesFactsAndStreams(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice, bob := ids.New("alice"), ids.New("bob")
	s := e.create(alice)
	seedObjects(t, e, s.ID)
	var ex api.Export
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID + "/export", user: alice}).json(t, &ex)
	if ex.Session != s.ID || len(ex.Facts) != 1 || len(ex.Streams) != 1 || streams.Status(ex.Streams[0].Closed) != streams.Completed ||
		len(ex.Streams[0].Parts) == 0 || ex.Streams[0].Parts[0].Delta != "hello" {
		t.Fatalf("export %+v", ex)
	}
	e.must(http.StatusNotFound, req{method: "GET", path: "/sessions/" + s.ID + "/export", user: bob})
}

// TestDeleteCutShortIsFinishedByARetry: when the bucket fails during a
// delete, the session is already buried (404 to everyone, its tombstone
// not purged) and the answer is an error; the owner's retry finishes the
// purge and nothing of the session remains but the tombstone.
func TestDeleteCutShortIsFinishedByARetry(t *testing.T) {
	t.Parallel()
	ft := faults.New(nil)
	e := newEmuEnv(t, streamsThrough(ft))
	alice, bob := ids.New("alice"), ids.New("bob")
	s := e.create(alice)
	seedObjects(t, e, s.ID)
	ft.Set(faults.Rule{Op: "s3:DeleteObject", Fault: faults.ServerError})
	if got := e.do(req{method: "DELETE", path: "/sessions/" + s.ID, user: alice}); got.status < 500 {
		t.Fatalf("delete with a failing bucket: %d %s, want a 5xx", got.status, got.body)
	}
	tomb, err := dynamoOn(shared.Table).Tombstone(t.Context(), s.ID)
	if err != nil || tomb.Purged {
		t.Fatalf("tombstone after a failed purge: %+v, %v; want one not purged", tomb, err)
	}
	e.must(http.StatusNotFound, req{method: "GET", path: "/sessions/" + s.ID, user: alice})
	if _, objects := remains(t, e, s.ID); len(objects) == 0 {
		t.Fatal("the failing bucket lost no object; the fault did not bite")
	}
	ft.Set()
	e.must(http.StatusNotFound, req{method: "DELETE", path: "/sessions/" + s.ID, user: bob})
	e.must(http.StatusNoContent, req{method: "DELETE", path: "/sessions/" + s.ID, user: alice})
	if items, objects := remains(t, e, s.ID); len(items) != 1 || len(objects) != 0 {
		t.Fatalf("after the retry: items %v objects %v, want only the tombstone", items, objects)
	}
}

// TestChatDeletedAndCreatedAgainIsDeletedAgain: a chat deleted and
// created again (its id names a new session) answers DELETE 204 every
// time, as do repeats; other callers still get 404.
func TestChatDeletedAndCreatedAgainIsDeletedAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice, bob := ids.New("alice"), ids.New("bob")
	chatID := ids.New("c")
	sid := chat.SessionID(alice, chatID)
	for life := range 3 {
		if _, _, err := e.store.Converse(t.Context(), sid, alice, "demo", reducer.Message{ID: ids.New("m"), Text: "hi"},
			func(reducer.State) error { return nil }); err != nil {
			t.Fatalf("life %d: chat message: %v", life, err)
		}
		e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + chatID, user: alice})
		e.must(http.StatusNotFound, req{method: "DELETE", path: "/sessions/" + chatID, user: bob})
		for range 2 {
			e.must(http.StatusNoContent, req{method: "DELETE", path: "/sessions/" + chatID, user: alice})
		}
		e.must(http.StatusNotFound, req{method: "GET", path: "/sessions/" + chatID, user: alice})
	}
}

// TestConcurrentDeletesAllAnswer204: deletes of one session sent at once
// are each answered as a delete (204), none with the 409 that means an
// open turn, and the session is gone whole.
func TestConcurrentDeletesAllAnswer204(t *testing.T) {
	t.Parallel()
	e := newEmuEnv(t, nil)
	alice := ids.New("alice")
	for range 3 {
		s := e.create(alice)
		seedObjects(t, e, s.ID)
		got := make(chan response, 8)
		for range cap(got) {
			go func() { got <- e.do(req{method: "DELETE", path: "/sessions/" + s.ID, user: alice}) }()
		}
		var answers []response
		for range cap(got) {
			answers = append(answers, <-got)
		}
		for _, r := range answers {
			if r.status != http.StatusNoContent {
				t.Fatalf("a concurrent delete answered %d %s, want 204", r.status, r.body)
			}
		}
		if items, objects := remains(t, e, s.ID); len(items) != 1 || len(objects) != 0 {
			t.Fatalf("after the deletes: items %v objects %v, want only the tombstone", items, objects)
		}
	}
}
