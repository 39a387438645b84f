package operator_test

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/pkg/reducer"
)

func keyed(key string) map[string]string { return map[string]string{"Idempotency-Key": key} }

// sameAnswer fails unless b repeats a: status, Location and body, and b
// says it is a replay.
func sameAnswer(t *testing.T, a, b response) {
	t.Helper()
	if a.status != b.status || !bytes.Equal(a.body, b.body) || a.header.Get("Location") != b.header.Get("Location") {
		t.Fatalf("retry answered %d %s (Location %q), first %d %s (Location %q)",
			b.status, b.body, b.header.Get("Location"), a.status, a.body, a.header.Get("Location"))
	}
	if a.header.Get("Idempotent-Replayed") != "" || b.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("Idempotent-Replayed: first %q, retry %q", a.header.Get("Idempotent-Replayed"), b.header.Get("Idempotent-Replayed"))
	}
}

// wantFacts fails if session id has other than n facts.
func (e *env) wantFacts(id string, n int) {
	e.t.Helper()
	if got := len(e.facts(id)); got != n {
		e.t.Fatalf("session %s has %d facts, want %d", id, got, n)
	}
}

func (e *env) sessionCount(user string) int {
	e.t.Helper()
	var l api.List
	e.must(http.StatusOK, req{method: "GET", path: "/sessions", user: user}).json(e.t, &l)
	return len(l.Sessions)
}

func TestIdempotentCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	user, other := ids.New("user"), ids.New("user")
	key := ids.New("key")
	r := req{method: "POST", path: "/sessions", user: user, body: `{"agent":"demo"}`, header: keyed(key)}
	first := e.must(http.StatusCreated, r)
	retry := e.must(http.StatusCreated, r)
	sameAnswer(t, first, retry)
	if n := e.sessionCount(user); n != 1 {
		t.Fatalf("%d sessions after a retried create, want 1", n)
	}

	// Another request under the key is refused, and creates nothing.
	changed := r
	changed.body = `{"agent": "demo"}`
	if got := e.must(http.StatusUnprocessableEntity, changed); !strings.Contains(got.errorMessage(t), "Idempotency-Key") {
		t.Fatalf("422 says %q", got.errorMessage(t))
	}
	if n := e.sessionCount(user); n != 1 {
		t.Fatalf("%d sessions after a refused create, want 1", n)
	}

	// The same key is another caller's own.
	theirs := r
	theirs.user = other
	mine := e.must(http.StatusCreated, theirs)
	if bytes.Equal(mine.body, first.body) || mine.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("another caller's create under the same key answered %s", mine.body)
	}
	if n := e.sessionCount(other); n != 1 {
		t.Fatalf("the other caller has %d sessions, want 1", n)
	}
}

func TestIdempotentMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	user := ids.New("user")
	id := e.create(user).ID
	path := "/sessions/" + id + "/messages"

	// A refused request does not take the key.
	key := ids.New("key")
	e.must(http.StatusBadRequest, req{method: "POST", path: path, user: user, body: `{"text":" "}`, header: keyed(key)})
	r := req{method: "POST", path: path, user: user, body: `{"text":"hello"}`, header: keyed(key)}
	first := e.must(http.StatusAccepted, r)
	e.wantFacts(id, 2)
	sameAnswer(t, first, e.must(http.StatusAccepted, r))
	e.wantFacts(id, 2)

	r.body = `{"text":"hello again"}`
	e.must(http.StatusUnprocessableEntity, r)
	r.path = "/sessions/" + id + "/cancel"
	e.must(http.StatusUnprocessableEntity, r) // another route is another request
	e.wantFacts(id, 2)

	// A new key is a new message.
	r = req{method: "POST", path: path, user: user, body: `{"text":"hello"}`, header: keyed(ids.New("key"))}
	if second := e.must(http.StatusAccepted, r); bytes.Equal(second.body, first.body) {
		t.Fatalf("a new key repeated the first answer %s", first.body)
	}
	e.wantFacts(id, 3)
}

// TestIdempotentMessageSentTwiceAtOnce sends one request ten times at the
// same moment, as a client retrying before its first try is answered: one
// message is recorded, and every answer names it.
func TestIdempotentMessageSentTwiceAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	user := ids.New("user")
	id := e.create(user).ID
	r := req{method: "POST", path: "/sessions/" + id + "/messages", user: user, body: `{"text":"once"}`, header: keyed(ids.New("key"))}
	answers := make([]response, 10)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() { answers[i] = e.do(r) })
	}
	wg.Wait()
	for _, a := range answers {
		if a.status != http.StatusAccepted || !bytes.Equal(a.body, answers[0].body) {
			t.Fatalf("answers differ: %d %s and %d %s", a.status, a.body, answers[0].status, answers[0].body)
		}
	}
	e.wantFacts(id, 2)
}

func TestIdempotentApproval(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	user := ids.New("user")
	id := e.create(user).ID
	turn, _ := e.startTurn(id)
	ap := e.suspendForApproval(id, turn)
	n := len(e.facts(id))
	r := req{method: "POST", path: "/sessions/" + id + "/approvals/" + ap.ID, user: user,
		body: `{"decision":"approve"}`, header: keyed(ids.New("key"))}
	first := e.must(http.StatusAccepted, r)
	e.wantFacts(id, n+1)
	// Without the key the retry would be refused: nothing is pending now.
	sameAnswer(t, first, e.must(http.StatusAccepted, r))
	r.body = `{"decision":"deny"}`
	e.must(http.StatusUnprocessableEntity, r)
	e.wantFacts(id, n+1)
	if fs := e.facts(id); fs[len(fs)-1].Answer.Decision != reducer.Approve {
		t.Fatalf("answered %+v", fs[len(fs)-1].Answer)
	}
}

func TestIdempotentVerdict(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	user := ids.New("user")
	id := e.create(user).ID
	turn, _ := e.startTurn(id)
	ex := e.suspendUncertain(id, turn)
	n := len(e.facts(id))
	r := req{method: "POST", path: "/sessions/" + id + "/executions/" + ex.ID, user: user,
		body: `{"verdict":"abandon"}`, header: keyed(ids.New("key"))}
	first := e.must(http.StatusAccepted, r)
	e.wantFacts(id, n+1)
	sameAnswer(t, first, e.must(http.StatusAccepted, r))
	r.body = `{"verdict":"rerun"}`
	e.must(http.StatusUnprocessableEntity, r)
	e.wantFacts(id, n+1)
}

func TestIdempotentCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	user := ids.New("user")
	id := e.create(user).ID
	e.startTurn(id)
	n := len(e.facts(id))
	r := req{method: "POST", path: "/sessions/" + id + "/cancel", user: user, header: keyed(ids.New("key"))}
	first := e.must(http.StatusAccepted, r)
	e.wantFacts(id, n+1)
	// Without the key the retry would be refused: no turn is open now.
	sameAnswer(t, first, e.must(http.StatusAccepted, r))
	r.body = `{"reason":"changed my mind"}`
	e.must(http.StatusUnprocessableEntity, r)
	e.wantFacts(id, n+1)
}

func TestIdempotencyKeyMustBeSane(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	user := ids.New("user")
	for _, key := range []string{"", strings.Repeat("k", api.MaxIdempotencyKey+1), "tab\there", "é"} {
		got := e.must(http.StatusBadRequest, req{method: "POST", path: "/sessions", user: user, body: `{"agent":"demo"}`, header: keyed(key)})
		if !strings.Contains(got.errorMessage(t), "Idempotency-Key") {
			t.Fatalf("key %q: %q", key, got.errorMessage(t))
		}
	}
	if n := e.sessionCount(user); n != 0 {
		t.Fatalf("%d sessions created with bad keys", n)
	}
}
