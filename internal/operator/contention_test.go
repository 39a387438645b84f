package operator_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// postAll sends n messages to session id at the same moment, through the
// servers in turn, and returns each one's status and latency.
func postAll(tb testing.TB, servers []*env, user, id string, n int) ([]int, []time.Duration) {
	tb.Helper()
	statuses := make([]int, n)
	took := make([]time.Duration, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		e := servers[i%len(servers)]
		wg.Go(func() {
			body := fmt.Sprintf(`{"text":"message %d"}`, i)
			hr, err := http.NewRequestWithContext(tb.Context(), "POST", e.srv.URL+"/sessions/"+id+"/messages", strings.NewReader(body))
			if err != nil {
				tb.Error(err)
				return
			}
			hr.Header.Set(userHeader, user)
			hr.Header.Set("Content-Type", "application/json")
			<-start
			t0 := time.Now()
			resp, err := e.client.Do(hr)
			if err != nil {
				tb.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses[i], took[i] = resp.StatusCode, time.Since(t0)
		})
	}
	close(start)
	wg.Wait()
	return statuses, took
}

// runTurns starts a turn whenever session id is idle with messages waiting,
// until done is closed and nothing waits.
func runTurns(ctx context.Context, tb testing.TB, store *session.Store, id string, done <-chan struct{}) {
	m, err := model.ParseScript([]byte(`{"steps":[{"text":"Noted."}]}`))
	if err != nil {
		tb.Error(err)
		return
	}
	reg, err := tool.NewRegistry(tool.Demo()...)
	if err != nil {
		tb.Error(err)
		return
	}
	agent := &turn.Agent{Name: "demo", System: "You are a test agent.", Model: m, Tools: reg, MaxTokens: 1024}
	runner := &turn.Runner{Sessions: store, Agents: turn.AgentMap{agent.Name: agent}}
	for {
		finishing := false // done was closed before this load
		select {
		case <-done:
			finishing = true
		default:
		}
		sess, err := store.Load(ctx, id)
		if err != nil {
			tb.Error(err)
			return
		}
		st := sess.State
		switch {
		case st.Status == reducer.Idle && len(st.Inbox) > 0:
			if _, err := runner.StartLoaded(ctx, sess); err != nil && !errors.Is(err, turn.ErrLost) {
				tb.Errorf("turn: %v", err)
				return
			}
		case st.Status != reducer.Idle:
			tb.Errorf("session %s is %s after a turn", id, st.Status)
			return
		case finishing:
			return
		default:
			select {
			case <-done:
			case <-ctx.Done():
				tb.Error(ctx.Err())
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
}

// TestConcurrentPostsAreAllAccepted posts 100 messages to one session at
// the same moment while turns run on it: every post is accepted, each
// message is one fact, the seqs stay dense, and every message is answered
// by a turn that completed (those posted during a turn by a later one).
func TestConcurrentPostsAreAllAccepted(t *testing.T) {
	t.Parallel()
	const n = 100
	e := newEnv(t, nil)
	user := ids.New("user")
	id := e.create(user).ID

	done := make(chan struct{})
	var turns sync.WaitGroup
	turns.Go(func() { runTurns(t.Context(), t, e.store, id, done) })
	statuses, took := postAll(t, []*env{e}, user, id, n)
	close(done)
	turns.Wait()

	for i, s := range statuses {
		if s != http.StatusAccepted {
			t.Errorf("post %d: status %d, want 202", i, s)
		}
	}
	slices.Sort(took)
	t.Logf("%d concurrent posts: p50 %v, p99 %v, max %v", n, took[n/2], took[n*99/100-1], took[n-1])

	// Fold the facts: which turn took each message, and how each turn ended.
	facts := e.facts(id)
	var st reducer.State
	answeredBy := map[string]string{} // message text → turn
	ended := map[string]reducer.Type{}
	received := 0
	for i, f := range facts {
		if f.Seq != int64(i+1) {
			t.Fatalf("fact %d has seq %d", i, f.Seq)
		}
		var err error
		if st, err = st.Apply(f); err != nil {
			t.Fatalf("fact %d: %v", f.Seq, err)
		}
		switch {
		case f.Type == reducer.MessageReceived:
			received++
		case f.Type == reducer.TurnStarted:
			for _, m := range st.Turn.Messages {
				answeredBy[m.Text] = f.Turn
			}
		case f.Ends():
			ended[f.Turn] = f.Type
		}
	}
	if received != n {
		t.Errorf("%d message.received facts, want %d", received, n)
	}
	for i := range n {
		text := fmt.Sprintf("message %d", i)
		tr, ok := answeredBy[text]
		if !ok {
			t.Errorf("%q was taken by no turn", text)
			continue
		}
		if ended[tr] != reducer.TurnCompleted {
			t.Errorf("%q: turn %s ended %q, want completed", text, tr, ended[tr])
		}
	}
	if st.Status != reducer.Idle || len(st.Inbox) != 0 {
		t.Errorf("at the end: %s with %d waiting", st.Status, len(st.Inbox))
	}
	t.Logf("%d facts, %d turns", len(facts), len(ended))
}

// TestConcurrentPostsFromManyServers posts 100 messages to one session at
// the same moment through four servers, as four API processes would: their
// stores share nothing, so the posts race for the compare-and-set and the
// losers back off. Every post is accepted, once, with dense seqs.
func TestConcurrentPostsFromManyServers(t *testing.T) {
	t.Parallel()
	const n = 100
	servers := []*env{newEnv(t, nil), newEnv(t, nil), newEnv(t, nil), newEnv(t, nil)}
	user := ids.New("user")
	id := servers[0].create(user).ID
	statuses, took := postAll(t, servers, user, id, n)
	for i, s := range statuses {
		if s != http.StatusAccepted {
			t.Errorf("post %d: status %d, want 202", i, s)
		}
	}
	slices.Sort(took)
	t.Logf("%d concurrent posts through %d servers: p50 %v, p99 %v", n, len(servers), took[n/2], took[n*99/100-1])
	facts := servers[0].facts(id)
	texts := map[string]bool{}
	for i, f := range facts {
		if f.Seq != int64(i+1) {
			t.Fatalf("fact %d has seq %d", i, f.Seq)
		}
		if f.Type == reducer.MessageReceived {
			texts[f.Message.Text] = true
		}
	}
	if len(facts) != n+1 || len(texts) != n {
		t.Fatalf("%d facts with %d distinct messages, want %d and %d", len(facts), len(texts), n+1, n)
	}
}

// BenchmarkConcurrentPosts posts 100 messages to a fresh session at the
// same moment, per iteration, through one server and through four, and
// reports the latency percentiles of the posts.
func BenchmarkConcurrentPosts(b *testing.B) {
	for _, k := range []int{1, 4} {
		b.Run(fmt.Sprintf("servers=%d", k), func(b *testing.B) {
			const n = 100
			var servers []*env
			for range k {
				servers = append(servers, newEnv(b, nil))
			}
			user := ids.New("user")
			var all []time.Duration
			for b.Loop() {
				id := servers[0].create(user).ID
				statuses, took := postAll(b, servers, user, id, n)
				for i, s := range statuses {
					if s != http.StatusAccepted {
						b.Fatalf("post %d: status %d", i, s)
					}
				}
				all = append(all, took...)
			}
			slices.Sort(all)
			pct := func(p int) float64 { return float64(all[(len(all)*p+99)/100-1].Microseconds()) / 1000 }
			b.ReportMetric(pct(50), "p50-ms")
			b.ReportMetric(pct(99), "p99-ms")
			b.ReportMetric(float64(all[len(all)-1].Microseconds())/1000, "max-ms")
		})
	}
}
