package api_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/pkg/reducer"
)

// sent is one request as the test server saw it.
type sent struct {
	method, uri, contentType, body string
	header                         http.Header
}

// recorder answers every request with status and body, and records it.
func recorder(t *testing.T, status int, body string) (*api.Client, *[]sent) {
	t.Helper()
	var got []sent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, sent{r.Method, r.URL.RequestURI(), r.Header.Get("Content-Type"), string(b), r.Header.Clone()})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	cl, err := api.NewClient(srv.URL+"/", api.ClientOptions{Token: "tok", Operator: "op", UserAgent: "ua"})
	if err != nil {
		t.Fatal(err)
	}
	return cl, &got
}

// TestClientSendsTheRoutesRequests: each method sends its route's method,
// path and JSON body (none where the route takes none), with the
// credentials and the user agent.
func TestClientSendsTheRoutesRequests(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		call   func(*api.Client) error
		method string
		uri    string
		body   string
	}{
		{func(c *api.Client) error { _, err := c.CreateSession(ctx, "demo"); return err }, "POST", "/sessions", `{"agent":"demo"}`},
		{func(c *api.Client) error { _, err := c.Sessions(ctx, 100, "c/1"); return err }, "GET", "/sessions?limit=100&cursor=c%2F1", ""},
		{func(c *api.Client) error { _, err := c.Session(ctx, "s 1"); return err }, "GET", "/sessions/s%201", ""},
		{func(c *api.Client) error { return c.DeleteSession(ctx, "s1") }, "DELETE", "/sessions/s1", ""},
		{func(c *api.Client) error { _, err := c.Export(ctx, "s1"); return err }, "GET", "/sessions/s1/export", ""},
		{func(c *api.Client) error { _, err := c.Send(ctx, "s1", "hi"); return err }, "POST", "/sessions/s1/messages", `{"text":"hi"}`},
		{func(c *api.Client) error { _, err := c.Facts(ctx, "s1", 7); return err }, "GET", "/sessions/s1/facts?after=7", ""},
		{func(c *api.Client) error { return c.Answer(ctx, "s1", "ap1", reducer.Approve, "") }, "POST", "/sessions/s1/approvals/ap1", `{"decision":"approve"}`},
		{func(c *api.Client) error { return c.Answer(ctx, "s1", "ap1", reducer.Deny, "no") }, "POST", "/sessions/s1/approvals/ap1", `{"decision":"deny","reason":"no"}`},
		{func(c *api.Client) error { return c.Settle(ctx, "s1", "ex1", reducer.Rerun) }, "POST", "/sessions/s1/executions/ex1", `{"verdict":"rerun"}`},
		{func(c *api.Client) error { return c.Cancel(ctx, "s1", "") }, "POST", "/sessions/s1/cancel", ""},
		{func(c *api.Client) error { return c.Cancel(ctx, "s1", "stop") }, "POST", "/sessions/s1/cancel", `{"reason":"stop"}`},
		{func(c *api.Client) error { return c.SetTimer(ctx, "s1", nil) }, "POST", "/sessions/s1/wake", `{"at":null}`},
		{func(c *api.Client) error { return c.SetTimer(ctx, "s1", &at) }, "POST", "/sessions/s1/wake", `{"at":"2026-01-02T03:04:05Z"}`},
		{func(c *api.Client) error {
			return c.SetSchedule(ctx, "s1", api.ScheduleRequest{Cron: "0 9 * * *", Text: "go"})
		}, "PUT", "/sessions/s1/schedule", `{"cron":"0 9 * * *","text":"go"}`},
		{func(c *api.Client) error { return c.ClearSchedule(ctx, "s1") }, "DELETE", "/sessions/s1/schedule", ""},
		{func(c *api.Client) error { return c.ReleaseGrant(ctx, "s1", "g1") }, "POST", "/sessions/s1/grants/g1/release", `{}`},
		{func(c *api.Client) error { _, err := c.Orphans(ctx); return err }, "GET", "/claims/orphans", ""},
		{func(c *api.Client) error { return c.ReleaseOrphan(ctx, "g1") }, "POST", "/claims/orphans/g1/release", `{}`},
		{func(c *api.Client) error { _, err := c.StreamPage(ctx, "s1", "t1", "0.1"); return err }, "GET", "/sessions/s1/turns/t1/stream?after=0.1", ""},
		{func(c *api.Client) error {
			_, err := c.Complete(ctx, "bcb1.a/b", api.CallbackRequest{Output: []byte(`{"build":7}`)})
			return err
		}, "POST", "/callbacks/bcb1.a%2Fb", `{"output":{"build":7}}`},
		{func(c *api.Client) error {
			_, err := c.Complete(ctx, "bcb1.x", api.CallbackRequest{Error: "failed"})
			return err
		}, "POST", "/callbacks/bcb1.x", `{"error":"failed"}`},
		{func(c *api.Client) error { _, err := c.Heartbeat(ctx, "bcb1.a/b"); return err }, "POST", "/callbacks/bcb1.a%2Fb/heartbeat", ""},
		{func(c *api.Client) error {
			_, err := c.CompleteCall(ctx, "s1", "call 1", api.CompleteCallRequest{CallbackRequest: api.CallbackRequest{Error: "no"}, Reason: "by hand"})
			return err
		}, "POST", "/sessions/s1/callbacks/call%201", `{"error":"no","reason":"by hand"}`},
	} {
		cl, got := recorder(t, http.StatusOK, `{}`)
		if err := tc.call(cl); err != nil {
			t.Errorf("%s %s: %v", tc.method, tc.uri, err)
			continue
		}
		if len(*got) != 1 {
			t.Fatalf("%s %s: %d requests", tc.method, tc.uri, len(*got))
		}
		r := (*got)[0]
		wantCT := ""
		if tc.body != "" {
			wantCT = "application/json"
		}
		if r.method != tc.method || r.uri != tc.uri || r.body != tc.body || r.contentType != wantCT {
			t.Errorf("sent %s %s %q (%s), want %s %s %q (%s)", r.method, r.uri, r.body, r.contentType, tc.method, tc.uri, tc.body, wantCT)
		}
		if r.header.Get("Authorization") != "Bearer tok" || r.header.Get("X-Baton-Operator") != "op" ||
			r.header.Get("User-Agent") != "ua" || r.header.Get("Accept") != "application/json" {
			t.Errorf("%s %s: headers %v", tc.method, tc.uri, r.header)
		}
	}
}

// TestClientErrors: a 4xx or 5xx is a *StatusError with the error body's
// message (or the status, without one); no server is an
// *UnreachableError; an address that is not http(s) is refused.
func TestClientErrors(t *testing.T) {
	ctx := context.Background()
	cl, _ := recorder(t, http.StatusConflict, `{"error":"approval \"ap1\" is not pending"}`)
	err := cl.Answer(ctx, "s1", "ap1", reducer.Approve, "")
	if se, ok := errors.AsType[*api.StatusError](err); !ok || se.Status != http.StatusConflict || se.Message != `approval "ap1" is not pending` {
		t.Errorf("409: %v", err)
	}
	cl, _ = recorder(t, http.StatusBadGateway, "")
	if _, err := cl.Session(ctx, "s1"); err == nil || err.Error() != "Bad Gateway (HTTP 502)" {
		t.Errorf("502 without a body: %v", err)
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	gone, err := api.NewClient(srv.URL, api.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gone.Session(ctx, "s1"); !strings.Contains(err.Error(), "cannot reach") {
		t.Errorf("no server: %v", err)
	} else if _, ok := errors.AsType[*api.UnreachableError](err); !ok {
		t.Errorf("no server: %T, want *api.UnreachableError", err)
	}
	if _, err := api.NewClient("ftp://x", api.ClientOptions{}); err == nil {
		t.Error("an ftp address was accepted")
	}
}

// TestClientKeepsTokensOutOfErrors: no error of a callback's route,
// a refusal or an answer that does not decode, holds its token.
func TestClientKeepsTokensOutOfErrors(t *testing.T) {
	ctx := context.Background()
	const token = "bcb1.c2Vzcw.dHVybg.c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldC0"
	for _, tc := range []struct {
		status int
		body   string
	}{{http.StatusOK, `not json`}, {http.StatusNotFound, `{"error":"no such callback"}`}, {http.StatusGone, ``}} {
		cl, _ := recorder(t, tc.status, tc.body)
		_, err1 := cl.Complete(ctx, token, api.CallbackRequest{Output: []byte(`1`)})
		_, err2 := cl.Heartbeat(ctx, token)
		for _, err := range []error{err1, err2} {
			if err == nil || strings.Contains(err.Error(), "c2VjcmV0") {
				t.Errorf("%d %q: error %v", tc.status, tc.body, err)
			}
		}
	}
}

// TestClientEvents: Events asks for an event stream after the last event
// id and hands back its body; an answer that is no event stream is an
// error.
func TestClientEvents(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != "text/event-stream" || r.Header.Get("Last-Event-ID") != "0.3" || r.URL.Path != "/sessions/s1/turns/t1/stream" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "id: 0.4\ndata: {}\n\n")
	}))
	t.Cleanup(srv.Close)
	cl, err := api.NewClient(srv.URL, api.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	body, err := cl.Events(context.Background(), "s1", "t1", "0.3")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(body)
	body.Close()
	if string(b) != "id: 0.4\ndata: {}\n\n" {
		t.Errorf("events %q", b)
	}
	if _, err := cl.Events(context.Background(), "s1", "t1", ""); err == nil || !strings.Contains(err.Error(), "not an event stream") {
		t.Errorf("a JSON answer: %v", err)
	}
}
