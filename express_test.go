package baton_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/dirbucket"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/intercept"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/turn"
)

// TestTurnOnExpressStreamBucket: with BATON_STREAM_BUCKET_TYPE=Express a
// turn runs end to end (a tool step, a suspension for approval, a resume
// that rebuilds the stream, completion) on a bucket with the directory
// bucket rules: shuffled listings and no StartAfter.
func TestTurnOnExpressStreamBucket(t *testing.T) {
	ctx := context.Background()
	script, err := baton.Script([]byte(`{"steps":[
	 {"text":"Paying.","toolCalls":[{"name":"pay","input":{"to":"acme","amount":900}}]},
	 {"text":"Paid."}
	]}`))
	if err != nil {
		t.Fatal(err)
	}
	paid := 0
	pay := baton.Func("pay", "Pay an invoice.", func(context.Context, struct {
		To     string  `json:"to"`
		Amount float64 `json:"amount"`
	}) (string, error) {
		paid++
		return "paid", nil
	}, baton.External(), baton.NeedsApproval())
	agent, err := app.GoAgent(baton.Agent{Name: "payer", Model: script, System: "You pay invoices.", Tools: []baton.Tool{pay}}, nil)
	if err != nil {
		t.Fatal(err)
	}

	e, err := testenv.Provision(ctx, testenv.Emulator(), baton.Template())
	if err != nil {
		t.Fatal(err)
	}
	dir := dirbucket.New(nil, 16)
	cfg := e.Clients().Config.Copy()
	cfg.HTTPClient = dir.Client()
	env, err := app.EnvFrom(func(name string) string {
		return map[string]string{app.EnvTable: e.Table, app.EnvBucket: e.Bucket, app.EnvQueueURL: e.QueueURL,
			app.EnvStreamBucketType: "Express"}[name]
	})
	if err != nil {
		t.Fatal(err)
	}
	// The stream store the App is wired on, as a store decorator sees it.
	var wired session.StreamStore
	see := intercept.Interceptor{Streams: func(s session.StreamStore) session.StreamStore { wired = s; return s }}
	a, err := app.NewWith(ctx, env, awsenv.New(cfg, e.URL()), slog.New(slog.NewTextHandler(io.Discard, nil)),
		app.WithAgents(app.Config{Interceptors: []intercept.Interceptor{see}}, agent))
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := wired.(*streams.Store); !ok || st.Type() != streams.Express {
		t.Fatalf("stream store %T, want an Express *streams.Store", wired)
	}

	id := ids.New("s")
	alice := reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"}
	if _, err := a.Sessions.Create(ctx, id, "alice", "payer"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Sessions.Post(ctx, id, alice, "Pay acme."); err != nil {
		t.Fatal(err)
	}
	out, err := a.Runner.Start(ctx, id)
	if err != nil || out.Kind != turn.Suspended || out.Cause != reducer.CauseApproval {
		t.Fatalf("start = %+v, %v; want suspended for approval", out, err)
	}
	sess, err := a.Sessions.Load(ctx, id)
	if err != nil || len(sess.State.Turn.Pending) != 1 {
		t.Fatalf("pending: %+v, %v", sess.State.Turn.Pending, err)
	}
	if err := a.Sessions.Answer(ctx, id, alice, reducer.Answer{ApprovalID: sess.State.Turn.Pending[0].ID, Decision: reducer.Approve, Reason: ""}); err != nil {
		t.Fatal(err)
	}
	out, err = a.Runner.Resume(ctx, id)
	if err != nil || out.Kind != turn.Completed {
		t.Fatalf("resume = %+v, %v; want completed", out, err)
	}
	if paid != 1 {
		t.Fatalf("the approved tool ran %d times", paid)
	}
	page, err := a.Sessions.ReadStream(ctx, id, out.Turn, "")
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, en := range page.Entries {
		text.WriteString(en.Part.Delta)
	}
	if page.Closed != streams.Completed || !strings.Contains(text.String(), "Paying.") || !strings.Contains(text.String(), "Paid.") {
		t.Fatalf("stream: closed %q, text %q", page.Closed, text.String())
	}
	infos, err := a.Sessions.Streams(ctx, id)
	if err != nil || len(infos) == 0 {
		t.Fatalf("streams of the session: %+v, %v", infos, err)
	}
	if dir.Refused() != 0 {
		t.Fatalf("%d listings a directory bucket refuses", dir.Refused())
	}
}
