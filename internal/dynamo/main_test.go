package dynamo

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/pkg/reducer"
)

// testEnv is the emulator and the table shared by the package's tests. kumo
// keeps state per process, so tests use unique session ids and owners, and
// a test that needs the whole table (Due) makes its own.
var testEnv testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &testEnv)) }

// sharedStore is a fresh Store (fresh request counter) on the shared table.
func sharedStore() *Store { return countingStore(testEnv.Emu.Clients.DynamoDB, testEnv.Table) }

// counters keeps the Counter of each store tests made counting.
var counters sync.Map // *Store → *Counter

// countingStore is a store on client and table that counts its requests.
func countingStore(client *dynamodb.Client, table string) *Store {
	c := &Counter{}
	s := New(client, table, Counting(c))
	counters.Store(s, c)
	return s
}

// Requests returns how many DynamoDB requests (attempts) s has sent; s must
// come from countingStore.
func (s *Store) Requests() int64 {
	c, _ := counters.Load(s)
	return c.(*Counter).Count()
}

// ownTable makes a Store on a new table of the test's own.
func ownTable(t *testing.T) *Store {
	t.Helper()
	return New(testEnv.Emu.Clients.DynamoDB, testenv.New(t).Table)
}

var t0 = time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)

// session builds a realistic session: facts get the next seqs and times,
// are folded with the reducer, and are appended with the resulting state.
type session struct {
	t     *testing.T
	store *Store
	id    string
	st    reducer.State
	now   time.Time
	turn  string
	facts []reducer.Fact
}

func newSession(t *testing.T, store *Store, owner string, created time.Time) *session {
	t.Helper()
	s := &session{t: t, store: store, id: ids.New("s"), now: created}
	s.append(reducer.Fact{Type: reducer.SessionCreated, Agent: "helper", Owner: owner,
		Actor: reducer.Actor{Kind: reducer.ActorOperator, ID: owner}})
	return s
}

// prepare numbers, times and folds facts without writing them.
func (s *session) prepare(facts ...reducer.Fact) (reducer.State, []reducer.Fact) {
	s.t.Helper()
	out := make([]reducer.Fact, len(facts))
	for i, f := range facts {
		f.Seq = s.st.LastSeq + int64(i) + 1
		if f.Time.IsZero() {
			f.Time = s.now.Add(time.Duration(i) * time.Second)
		}
		if f.Actor.Kind == "" {
			f.Actor = reducer.Actor{Kind: reducer.ActorAgent, ID: f.Turn}
		}
		out[i] = f
	}
	next, err := s.st.Apply(out...)
	if err != nil {
		s.t.Fatalf("reduce: %v", err)
	}
	return next, out
}

func (s *session) append(facts ...reducer.Fact) {
	s.t.Helper()
	next, out := s.prepare(facts...)
	if err := s.store.Append(s.t.Context(), s.id, next, out...); err != nil {
		s.t.Fatalf("append: %v", err)
	}
	s.st, s.facts = next, append(s.facts, out...)
	s.now = s.now.Add(time.Duration(len(facts)) * time.Second)
}

func (s *session) message(text string) {
	s.t.Helper()
	s.append(reducer.Fact{Type: reducer.MessageReceived,
		Actor:   reducer.Actor{Kind: reducer.ActorOperator, ID: "op"},
		Message: &reducer.Message{ID: ids.New("m"), Text: text}})
}

func (s *session) start() {
	s.t.Helper()
	s.turn = ids.New("t")
	s.append(reducer.Fact{Type: reducer.TurnStarted, Turn: s.turn, Stream: s.turn + "/stream",
		Lease: s.now.Add(15 * time.Minute)})
}

func (s *session) complete(snapshot string) {
	s.t.Helper()
	s.append(reducer.Fact{Type: reducer.TurnCompleted, Turn: s.turn, Snapshot: snapshot,
		Usage: &reducer.Usage{InputTokens: 100, OutputTokens: 20, Steps: 2}})
}

// turns runs n complete turns, each ending with a snapshot.
func (s *session) turns(n int) {
	s.t.Helper()
	for i := range n {
		s.message(fmt.Sprintf("question %d", i))
		s.start()
		s.complete(fmt.Sprintf("snap/%s/%d", s.id, s.st.LastSeq+1))
	}
}

func seqs(facts []reducer.Fact) []int64 {
	out := make([]int64, len(facts))
	for i, f := range facts {
		out[i] = f.Seq
	}
	return out
}

func seqRange(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
