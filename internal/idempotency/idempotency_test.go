package idempotency

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/httpjson"
)

func TestReadKey(t *testing.T) {
	req := func(key, path, body string) *http.Request {
		r := httptest.NewRequest("POST", path, strings.NewReader(body))
		r.Header.Set(api.IdempotencyHeader, key)
		return r
	}
	a, ok, err := Read(httptest.NewRecorder(), req("k", "/sessions", "{}"), "alice", 1<<10)
	if err != nil || !ok {
		t.Fatalf("Read: %v %v", ok, err)
	}
	r := req("k", "/sessions", "{}")
	b, _, _ := Read(httptest.NewRecorder(), r, "alice", 1<<10)
	if a != b {
		t.Fatalf("the same request under the same key read %v then %v", a, b)
	}
	if body, err := io.ReadAll(r.Body); err != nil || string(body) != "{}" {
		t.Fatalf("the body was not put back: %q %v", body, err)
	}
	if c, _, _ := Read(httptest.NewRecorder(), req("k", "/sessions", "{}"), "bob", 1<<10); c.Key == a.Key {
		t.Fatal("keys are per caller: bob's key is alice's")
	}
	if c, _, _ := Read(httptest.NewRecorder(), req("k", "/sessions", `{"a":1}`), "alice", 1<<10); c.Key != a.Key || c.Request == a.Request {
		t.Fatalf("another request under the key: %v, first %v", c, a)
	}
	if _, ok, err := Read(httptest.NewRecorder(), httptest.NewRequest("POST", "/", nil), "alice", 1<<10); ok || err != nil {
		t.Fatalf("no key: %v %v", ok, err)
	}
	for _, key := range []string{"", strings.Repeat("k", api.MaxIdempotencyKey+1), "tab\there", "é"} {
		if _, _, err := Read(httptest.NewRecorder(), req(key, "/", ""), "alice", 1<<10); status(err) != http.StatusBadRequest {
			t.Errorf("key %q: %v", key, err)
		}
	}
}

type receipts map[string]dynamo.Receipt

func (rs receipts) Receipt(_ context.Context, key string) (dynamo.Receipt, bool, error) {
	rc, ok := rs[key]
	return rc, ok, nil
}

func TestLookup(t *testing.T) {
	rs := receipts{"k": {Key: "k", Request: "r", Answer: []byte(`{"status":201,"location":"/x","body":{"id":"x"}}`)}}
	ctx := context.Background()
	rp, ok, err := Lookup[Reply](ctx, rs, Key{Key: "k", Request: "r"})
	if err != nil || !ok || rp.Status != 201 || rp.Location != "/x" || string(rp.Body) != `{"id":"x"}` {
		t.Fatalf("Lookup: %+v %v %v", rp, ok, err)
	}
	if _, ok, err := Lookup[Reply](ctx, rs, Key{Key: "other", Request: "r"}); ok || err != nil {
		t.Fatalf("no receipt: %v %v", ok, err)
	}
	if _, _, err := Lookup[Reply](ctx, rs, Key{Key: "k", Request: "another"}); status(err) != http.StatusUnprocessableEntity {
		t.Fatalf("another request under the key: %v", err)
	}
}

func TestWriteReply(t *testing.T) {
	rp, err := NewReply(http.StatusCreated, "/sessions/s", map[string]string{"id": "s"})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	Write(w, rp)
	h := w.Result().Header
	if w.Code != 201 || w.Body.String() != "{\"id\":\"s\"}\n" || h.Get("Location") != "/sessions/s" ||
		h.Get("Content-Type") != "application/json" || h.Get("Cache-Control") != "no-store" || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("wrote %d %q %v", w.Code, w.Body, h)
	}
}

// status is the status of refusal err, 0 for another error.
func status(err error) int {
	if r, ok := errors.AsType[*httpjson.Refusal](err); ok {
		return r.Status
	}
	return 0
}
