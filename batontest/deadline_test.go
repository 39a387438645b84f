package batontest_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/host"
)

// recordTB is a TB whose Fatalf records the message and ends the goroutine.
type recordTB struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (r *recordTB) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.msg = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

// A tool that blocks until its context is done runs the invocation into
// its deadline: Run fails and says so, instead of returning a bare budget
// suspension.
func TestRunSaysItHitTheDeadline(t *testing.T) {
	block := baton.Func("block", "Blocks.", func(ctx context.Context, _ struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}, baton.Read())
	m, err := baton.Script([]byte(`{"steps":[{"toolCalls":[{"name":"block","input":{}}]},{"text":"done"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordTB{TB: t}
	kit := batontest.NewWith(rec, host.Config{Agents: []baton.Agent{{
		Name: "a", Model: m, Tools: []baton.Tool{block},
		Limits: baton.Limits{Margin: 200 * time.Millisecond},
	}}}, batontest.Options{Timeout: 3 * time.Second})
	s := kit.Session("a")
	s.Post("go")
	done := make(chan batontest.Outcome, 1)
	go func() {
		defer close(done)
		done <- s.Run()
	}()
	out, ok := <-done
	if ok {
		t.Fatalf("Run returned %+v, want a failure that names the deadline", out)
	}
	if !strings.Contains(rec.msg, "deadline") || !strings.Contains(rec.msg, "blocked") {
		t.Fatalf("Run's failure = %q, want it to say the invocation hit its deadline while blocked", rec.msg)
	}
}
