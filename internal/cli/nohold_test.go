package cli_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/baton-run/baton/internal/devserver"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/operator"
	"github.com/baton-run/baton/internal/provision"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/pkg/streams"
)

// TestTailAgainstAServerThatDoesNotHold tails through a second operator
// API on the dev server's table and bucket that, like the deployed
// function, answers a stream read at once instead of holding it open. The
// tail polls, and renders the turn whole and once.
func TestTailAgainstAServerThatDoesNotHold(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	emu := testenv.Emulator()
	names := provision.DefaultNames()
	store := session.New(dynamo.New(emu.Clients.DynamoDB, names.Table), streams.New(emu.Clients.S3, names.Bucket))
	api := operator.New(operator.Config{Sessions: store, Agents: func(string) bool { return true },
		Identity: func(*http.Request) (string, bool) { return devserver.LocalOperator, true }})
	var reads atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/stream") {
			reads.Add(1)
		}
		api.ServeHTTP(w, r)
	}))
	defer srv.Close()

	// Messages and answers go to the dev server, which wakes its worker.
	id := strings.TrimSpace(must(t, ctx, vars{}, "new", "demo"))
	must(t, ctx, vars{}, "send", id, demoMessage)
	tl := startTail(ctx, vars{"BATON_API": srv.URL}, id, "--until-idle")
	approval := tl.waitFor(t, ctx, approvalLine)[2]
	must(t, ctx, vars{}, "approve", id, approval)
	if code := tl.wait(t, ctx); code != 0 {
		t.Fatalf("tail exited %d; stderr:\n%s", code, tl.stderr)
	}
	checkTurnRendered(t, tl.out.String(), "✓ approval "+approval+" approved")
	if reads.Load() < 2 {
		t.Fatalf("%d stream reads; an unheld stream takes several", reads.Load())
	}
	if tl.stderr.String() != "" {
		t.Fatalf("reads that end at once are not failures, but the tail noted:\n%s", tl.stderr)
	}
	t.Logf("%d stream reads", reads.Load())
}
