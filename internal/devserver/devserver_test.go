package devserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/devserver"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/provision"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// serve starts the dev server with its embedded defaults until ctx is
// done, its how-to printed to out (nil for none), and returns the API's
// base URL once it listens, and what Run returns once ctx is done.
func serve(t *testing.T, ctx context.Context, out io.Writer) (string, <-chan error) {
	t.Helper()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- devserver.Run(ctx, devserver.Options{Addr: "127.0.0.1:0", Tick: time.Second, Out: out, Template: baton.Template(),
			Ready: func(u string) { ready <- u }}, slog.New(slog.DiscardHandler))
	}()
	select {
	case base := <-ready:
		return base, done
	case err := <-done:
		t.Fatalf("dev server stopped: %v", err)
	case <-ctx.Done():
		t.Fatal("dev server never became ready")
	}
	return "", done
}

// TestDemoTurnThroughTheDevServer runs the README's dev server with its
// embedded defaults and drives the demo agent's turn through the API: it
// streams, checks the weather, asks approval to email, and completes once
// approved.
func TestDemoTurnThroughTheDevServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	base, done := serve(t, ctx, &out)
	for i, step := range []string{"starting the AWS emulator", "creating the table, bucket and queues", "building the agents", base + "/sessions"} {
		at := strings.Index(out.String(), step)
		if at < 0 {
			t.Fatalf("the dev server did not print %q before it was ready:\n%s", step, out.String())
		}
		if i > 0 && at < strings.Index(out.String(), "baton dev: starting") {
			t.Fatalf("%q came before the first progress line:\n%s", step, out.String())
		}
	}
	if !strings.Contains(out.String(), base+"/sessions") {
		t.Fatalf("the how-to does not show the API address:\n%s", out.String())
	}
	if !strings.Contains(out.String(), base+"/console/") {
		t.Fatalf("the how-to does not show the console's address:\n%s", out.String())
	}
	if resp, err := http.Get(base + "/console/"); err != nil || resp.StatusCode != http.StatusOK ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /console/: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	call := func(method, path, body string, into any) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if into != nil {
			if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
		}
		return resp.StatusCode
	}
	var sess struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Turn   *struct {
			ID string `json:"id"`
		} `json:"turn"`
		Pending []struct {
			ApprovalID string `json:"approvalId"`
			Tool       string `json:"tool"`
		} `json:"pending"`
		Turns int `json:"turns"`
	}
	if code := call("POST", "/sessions", `{"agent":"demo"}`, &sess); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	id := sess.ID
	if code := call("POST", "/sessions/"+id+"/messages", `{"text":"Send the team a status update"}`, nil); code != http.StatusAccepted {
		t.Fatalf("message: %d", code)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			select {
			case <-ctx.Done():
				t.Fatalf("timed out waiting for %s; last state %+v", what, sess)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	waitFor("the approval request", func() bool {
		call("GET", "/sessions/"+id, "", &sess)
		return len(sess.Pending) == 1
	})
	if sess.Pending[0].Tool != "send_email" {
		t.Fatalf("pending = %+v", sess.Pending)
	}
	turn := sess.Turn.ID
	if code := call("POST", "/sessions/"+id+"/approvals/"+sess.Pending[0].ApprovalID, `{"decision":"approve"}`, nil); code != http.StatusAccepted {
		t.Fatalf("approve: %d", code)
	}
	waitFor("the turn to complete", func() bool {
		call("GET", "/sessions/"+id, "", &sess)
		return sess.Status == "idle" && sess.Turns == 1
	})
	var page struct {
		Parts []struct {
			Part struct {
				Type  string `json:"type"`
				Delta string `json:"delta"`
			} `json:"part"`
		} `json:"parts"`
		Closed string `json:"closed"`
	}
	call("GET", "/sessions/"+id+"/turns/"+turn+"/stream", "", &page)
	var text strings.Builder
	types := map[string]int{}
	for _, p := range page.Parts {
		types[p.Part.Type]++
		text.WriteString(p.Part.Delta)
	}
	if page.Closed != "completed" || types["tool-output-available"] != 2 || types["tool-approval-response"] != 1 || types["finish"] != 1 {
		t.Fatalf("stream closed=%q parts=%v", page.Closed, types)
	}
	if !strings.Contains(text.String(), "Done: the weather in Lisbon is clear") {
		t.Fatalf("streamed text lacks the answer: %q", text.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("dev server: %v", err)
	}
}

// TestDevServerTickReapsAKilledTurn runs the dev server with a 1 s tick,
// less than the tick's default margin, and leaves a turn running with no
// invocation behind it, as a killed one does: the tick reaps it.
func TestDevServerTickReapsAKilledTurn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base, done := serve(t, ctx, nil)
	post := func(path, body string, into any) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "POST", base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if into != nil {
			_ = json.NewDecoder(resp.Body).Decode(into)
		}
		return resp.StatusCode
	}
	var sess struct {
		ID string `json:"id"`
	}
	if code := post("/sessions", `{"agent":"demo"}`, &sess); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}

	// A runner that took the turn and died: its facts, written straight to
	// the dev server's table (kumo's state is process-wide), and no wake.
	emu := testenv.Emulator()
	names := provision.DefaultNames()
	store := session.New(dynamo.New(emu.Clients.DynamoDB, names.Table), streams.New(emu.Clients.S3, names.Bucket))
	loaded, err := store.Load(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	killed := ids.New("turn")
	if _, err := store.Append(ctx, sess.ID, loaded.State,
		reducer.Fact{Type: reducer.MessageReceived, Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: devserver.LocalOperator},
			Message: &reducer.Message{ID: ids.New("msg"), Text: "Anyone there?"}},
		reducer.Fact{Type: reducer.TurnStarted, Actor: reducer.Actor{Kind: reducer.ActorAgent, ID: killed},
			Turn: killed, Stream: killed, Lease: time.Now().Add(200 * time.Millisecond)},
	); err != nil {
		t.Fatal(err)
	}

	for {
		facts, err := store.Facts(ctx, sess.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		reaped := slices.ContainsFunc(facts, func(f reducer.Fact) bool {
			return f.Type == reducer.TurnSuspended && f.Cause == reducer.CauseLease && f.Turn == killed
		})
		if reaped {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the killed turn was never reaped; facts: %+v", facts)
		case <-time.After(100 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("dev server: %v", err)
	}
}

// TestDevServerTakesTheFunctionsEnvironment: the dev server's App gets the
// environment the template gives the functions, the tick's wake grace
// included, on the provisioned resources.
func TestDevServerTakesTheFunctionsEnvironment(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	got := make(chan app.Resources, 1)
	format := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- devserver.Run(ctx, devserver.Options{Addr: "127.0.0.1:0", Tick: time.Second, Template: baton.Template(),
			Build: func(ctx context.Context, vars map[string]string, cfg aws.Config, log *slog.Logger) (devserver.App, error) {
				env, err := app.FromVars(vars)
				if err != nil {
					return nil, err
				}
				got <- env
				format <- vars[app.EnvLogFormat]
				return app.New(ctx, env, awsenv.FromConfig(cfg), log)
			},
			Ready: func(string) { cancel() }}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	env := <-got
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if env.WakeGrace != 2*time.Minute || env.Table != "baton-sessions" || env.QueueURL == "" || <-format != "text" {
		t.Fatalf("env %+v, want the template's wake grace (2m) on the provisioned resources", env)
	}
}
