package claimsdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/faults"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/memtable"
)

func claimsCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func claimWrite(ns, key string) []claims.Claim {
	return []claims.Claim{{Namespace: ns, Key: key, Access: claims.Write}}
}

// Fifty requests race for one write claim on the emulator: the space never
// holds two grants, each request is granted exactly once, and every one is
// granted in the end (a release wakes the next waiter).
func TestBrokerRaceOneWriteClaim(t *testing.T) {
	ctx := claimsCtx(t)
	counter := &awsenv.Counter{}
	cl := awsenv.Counted(testEnv.URL(), counter)
	b := New(cl.DynamoDB, testEnv.Table)
	ns := "race" + ids.New("n")
	const n = 50
	wakes := make([]chan struct{}, n)
	for i := range wakes {
		wakes[i] = make(chan struct{}, 1)
	}
	var holders, overlaps, granted atomic.Int64
	woken := make([]atomic.Int64, n) // when a release last woke each, unix ns
	var latMu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := claims.Request{ID: fmt.Sprintf("g%02d", i), Session: fmt.Sprint(i), Claims: claimWrite(ns, "orders/o-1")}
			for {
				adm, err := b.Acquire(ctx, req)
				if err != nil {
					errs <- err
					return
				}
				if adm.Outcome != claims.Granted {
					if len(adm.Blockers) == 0 && adm.Ahead == 0 {
						errs <- fmt.Errorf("blocked by nothing: %+v", adm)
						return
					}
					select {
					case <-wakes[i]:
					case <-time.After(2 * time.Second): // a lost wake: ask again
					case <-ctx.Done():
						errs <- ctx.Err()
						return
					}
					continue
				}
				if holders.Add(1) != 1 {
					overlaps.Add(1)
				}
				if w := woken[i].Load(); w != 0 {
					latMu.Lock()
					lat = append(lat, time.Since(time.Unix(0, w)))
					latMu.Unlock()
				}
				gs, _, err := b.Grants(ctx, claims.SpaceKey{Namespace: ns, Instance: ""})
				if err != nil || len(gs) != 1 || gs[0].ID != req.ID {
					overlaps.Add(1)
				}
				granted.Add(1)
				holders.Add(-1)
				ready, err := b.Release(ctx, adm.Grant)
				if err != nil {
					errs <- err
					return
				}
				for _, w := range ready {
					var j int
					fmt.Sscan(w.Session, &j)
					woken[j].Store(time.Now().UnixNano())
					select {
					case wakes[j] <- struct{}{}:
					default:
					}
				}
				return
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if overlaps.Load() != 0 {
		t.Fatalf("%d overlapping grants", overlaps.Load())
	}
	if granted.Load() != n {
		t.Fatalf("%d grants, want %d", granted.Load(), n)
	}
	gs, ws, err := b.Grants(ctx, claims.SpaceKey{Namespace: ns, Instance: ""})
	if err != nil || len(gs) != 0 || len(ws) != 0 {
		t.Fatalf("left over: %d grants, %d waiters, %v", len(gs), len(ws), err)
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		t.Logf("%d DynamoDB requests for %d grants under contention; a release's wake to the waiter's grant (%d): p50 %v, p99 %v",
			counter.Total("dynamodb:"), n, len(lat), lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)])
	}
}

// A request whose claims are not canonical is refused with a typed error
// and writes nothing.
func TestBrokerRefusesNonCanonical(t *testing.T) {
	ctx := claimsCtx(t)
	counter := &awsenv.Counter{}
	b := New(awsenv.Counted(testEnv.URL(), counter).DynamoDB, testEnv.Table)
	_, err := b.Acquire(ctx, claims.Request{ID: "g", Session: "s", Claims: claimWrite("fs", "a/../b")})
	var ke *claims.KeyError
	if !errors.As(err, &ke) {
		t.Fatalf("err = %v, want *claims.KeyError", err)
	}
	if counter.Total("dynamodb:") != 0 {
		t.Fatalf("%d requests sent for a refused claim", counter.Total("dynamodb:"))
	}
}

// A grant past its deadline is released or quarantined as Fate says, and
// only when it blocks someone; a quarantined one is never released by a
// deadline.
func TestBrokerStaleGrantFate(t *testing.T) {
	onBrokerTables(t, func(t *testing.T, client API, table string) {
		ctx := claimsCtx(t)
		b := New(client, table)
		ns := "fate" + ids.New("n")
		past := time.Now().Add(-time.Minute)
		fates := map[string]claims.Fate{"never-started": claims.Release, "started": claims.Quarantine}
		b.Fate = func(_ context.Context, g claims.Grant) (claims.Fate, error) { return fates[g.ID], nil }
		for id := range fates {
			if adm, err := b.Acquire(ctx, claims.Request{ID: id, Session: id, Claims: claimWrite(ns, id), Deadline: past}); err != nil || adm.Outcome != claims.Granted {
				t.Fatalf("acquire %s: %+v %v", id, adm, err)
			}
		}
		adm, err := b.Acquire(ctx, claims.Request{ID: "w1", Session: "w", Claims: claimWrite(ns, "never-started")})
		if err != nil || adm.Outcome != claims.Granted {
			t.Fatalf("behind a never-started grant: %+v %v", adm, err)
		}
		adm, err = b.Acquire(ctx, claims.Request{ID: "w2", Session: "w", Claims: claimWrite(ns, "started")})
		if err != nil || adm.Outcome != claims.Blocked || len(adm.Blockers) != 1 || !adm.Blockers[0].Quarantined {
			t.Fatalf("behind a started grant: %+v %v", adm, err)
		}
	})
}

// A request over two namespaces is granted whole (one transaction) or
// waits whole; a prefix of a granted key conflicts, a sibling does not;
// the release names the waiter it unblocked.
func TestBrokerMultiSpaceAndPrefixes(t *testing.T) {
	onBrokerTables(t, func(t *testing.T, client API, table string) {
		ctx := claimsCtx(t)
		b := New(client, table)
		fs, git := "fs"+ids.New("n"), "git"+ids.New("n")
		both := claims.Request{ID: "g1", Session: "s1", Claims: []claims.Claim{
			{Namespace: fs, Key: "src/a", Access: claims.Write},
			{Namespace: git, Key: "refs/heads/main", Access: claims.Write},
		}}
		adm, err := b.Acquire(ctx, both)
		if err != nil || adm.Outcome != claims.Granted {
			t.Fatalf("both: %+v %v", adm, err)
		}
		for _, ns := range []string{fs, git} {
			if gs, _, _ := b.Grants(ctx, claims.SpaceKey{Namespace: ns, Instance: ""}); len(gs) != 1 || gs[0].ID != "g1" {
				t.Fatalf("space %s holds %+v, want g1", ns, gs)
			}
		}
		sibling := claims.Request{ID: "g2", Session: "s2", Claims: []claims.Claim{{Namespace: fs, Key: "src/ab", Access: claims.Write}}}
		if adm, err := b.Acquire(ctx, sibling); err != nil || adm.Outcome != claims.Granted {
			t.Fatalf("src/ab beside src/a: %+v %v", adm, err)
		}
		parent := claims.Request{ID: "g3", Session: "s3", Claims: []claims.Claim{
			{Namespace: fs, Key: "src", Access: claims.Read},
			{Namespace: git, Key: "refs/tags/v1", Access: claims.Write},
		}}
		adm, err = b.Acquire(ctx, parent)
		if err != nil || adm.Outcome != claims.Blocked || len(adm.Blockers) != 2 {
			t.Fatalf("reading src under writes to src/a and src/ab: %+v %v", adm, err)
		}
		if gs, _, _ := b.Grants(ctx, claims.SpaceKey{Namespace: git, Instance: ""}); len(gs) != 1 {
			t.Fatalf("a blocked request took part of its claims: %+v", gs)
		}
		if ready, err := b.Release(ctx, claims.Grant{ID: "g2", Claims: sibling.Claims}); err != nil || len(ready) != 0 {
			t.Fatalf("release g2: ready %+v %v, want none (g1 still blocks)", ready, err)
		}
		ready, err := b.Release(ctx, adm.Blockers[0])
		if err != nil || len(ready) != 1 || ready[0].Session != "s3" {
			t.Fatalf("release g1: ready %+v %v, want s3", ready, err)
		}
		if adm, err := b.Acquire(ctx, parent); err != nil || adm.Outcome != claims.Granted {
			t.Fatalf("after the releases: %+v %v", adm, err)
		}
	})
}

// A namespace's weighted capacity admits claims while they fit, holds the
// next over capacity, refuses one heavier than the whole, and serves the
// queue in order when a grant is released.
func TestBrokerCapacity(t *testing.T) {
	onBrokerTables(t, func(t *testing.T, client API, table string) {
		ctx := claimsCtx(t)
		ns := "gpu" + ids.New("n")
		b := New(client, table)
		b.Capacity = map[string]int{ns: 3}
		req := func(id string, w int) claims.Request {
			return claims.Request{ID: id, Session: "s" + id, Claims: []claims.Claim{{Namespace: ns, Key: id, Access: claims.Read, Weight: w}}}
		}
		for _, r := range []claims.Request{req("a", 2), req("b", 1)} {
			if adm, err := b.Acquire(ctx, r); err != nil || adm.Outcome != claims.Granted {
				t.Fatalf("%s: %+v %v", r.ID, adm, err)
			}
		}
		if adm, err := b.Acquire(ctx, req("c", 2)); err != nil || adm.Outcome != claims.OverCapacity {
			t.Fatalf("c: %+v %v, want over capacity", adm, err)
		}
		if adm, err := b.Acquire(ctx, req("d", 1)); err != nil || adm.Outcome != claims.Blocked || adm.Ahead != 1 {
			t.Fatalf("d behind c: %+v %v, want blocked with one ahead", adm, err)
		}
		if _, err := b.Acquire(ctx, req("e", 4)); !errors.Is(err, claims.ErrTooHeavy) {
			t.Fatalf("e: %v, want ErrTooHeavy", err)
		}
		ready, err := b.Release(ctx, claims.Grant{ID: "a", Claims: req("a", 2).Claims})
		if err != nil || len(ready) != 1 || ready[0].ID != "c" {
			t.Fatalf("ready after a's release: %+v %v, want c first", ready, err)
		}
	})
}

// Under lost answers (the write happens, the caller sees a reset) and
// lost races on the broker's puts, acquire, block and release each land
// once: the SDK's resend fails its version check, and the broker reads
// again and finds its own write.
func TestBrokerLostAnswers(t *testing.T) {
	for _, kind := range []faults.Kind{faults.LostResponse, faults.Conflict, faults.Throughput} {
		t.Run(string(kind), func(t *testing.T) {
			ctx := claimsCtx(t)
			tr := faults.New(nil)
			b := New(faults.Clients(testEnv.URL(), tr).DynamoDB, testEnv.Table)
			ns := "lost" + ids.New("n")
			tr.Set(faults.Rule{Op: "dynamodb:PutItem", Body: claimsOwnerPrefix + "#" + ns, Times: 1, Fault: kind})
			first := claims.Request{ID: "g1", Session: "s1", Claims: claimWrite(ns, "a")}
			adm, err := b.Acquire(ctx, first)
			if err != nil && kind != faults.LostResponse {
				t.Fatalf("acquire: %v", err)
			}
			if err != nil { // the SDK does not resend a reset it cannot tell from a lost write: ask again
				adm, err = b.Acquire(ctx, first)
			}
			if err != nil || adm.Outcome != claims.Granted {
				t.Fatalf("acquire: %+v %v", adm, err)
			}
			tr.Set(faults.Rule{Op: "dynamodb:PutItem", Body: claimsOwnerPrefix + "#" + ns, Times: 1, Fault: kind})
			second := claims.Request{ID: "g2", Session: "s2", Claims: claimWrite(ns, "a/b")}
			if adm, err = b.Acquire(ctx, second); err != nil {
				adm, err = b.Acquire(ctx, second)
			}
			if err != nil || adm.Outcome != claims.Blocked {
				t.Fatalf("blocked: %+v %v", adm, err)
			}
			tr.Set(faults.Rule{Op: "dynamodb:PutItem", Body: claimsOwnerPrefix + "#" + ns, Times: 1, Fault: kind})
			ready, err := b.Release(ctx, adm.Blockers[0])
			if err != nil {
				ready, err = b.Release(ctx, adm.Blockers[0])
			}
			gs, ws, gerr := b.Grants(ctx, claims.SpaceKey{Namespace: ns, Instance: ""})
			if err != nil || gerr != nil || len(gs) != 0 || len(ws) != 1 || ws[0].ID != "g2" {
				t.Fatalf("after the release: ready %+v (%v), grants %+v, waiters %+v (%v)", ready, err, gs, ws, gerr)
			}
			if adm, err = b.Acquire(ctx, second); err != nil || adm.Outcome != claims.Granted {
				t.Fatalf("second after the release: %+v %v", adm, err)
			}
			if n := len(tr.Injected()); n != 3 {
				t.Fatalf("%d faults injected, want 3", n)
			}
		})
	}
}

// A blocked request that withdraws (its turn was cancelled) no longer holds
// up the request queued behind it: A holds a write claim, B blocks, C
// blocks behind B; B withdraws; A's release names C, and C is granted. The
// broker's clock stands still, so no waiter's TTL is what frees C.
func TestBrokerWithdrawLetsTheNextGo(t *testing.T) {
	onBrokerTables(t, func(t *testing.T, client API, table string) {
		ctx := claimsCtx(t)
		b := New(client, table)
		b.Clock = func() time.Time { return t0 }
		ns := "withdraw" + ids.New("n")
		req := func(id string) claims.Request {
			return claims.Request{ID: id, Session: "s" + id, Claims: claimWrite(ns, "orders/o-1")}
		}
		if adm, err := b.Acquire(ctx, req("a")); err != nil || adm.Outcome != claims.Granted {
			t.Fatalf("a: %+v %v", adm, err)
		}
		if adm, err := b.Acquire(ctx, req("b")); err != nil || adm.Outcome != claims.Blocked {
			t.Fatalf("b: %+v %v", adm, err)
		}
		adm, err := b.Acquire(ctx, req("c"))
		if err != nil || adm.Outcome != claims.Blocked || adm.Ahead != 1 {
			t.Fatalf("c: %+v %v, want blocked behind b", adm, err)
		}
		if ready, err := b.Withdraw(ctx, req("b")); err != nil || len(ready) != 0 {
			t.Fatalf("withdraw b: ready %+v %v, want none (a holds)", ready, err)
		}
		if _, ws, err := b.Grants(ctx, claims.SpaceKey{Namespace: ns, Instance: ""}); err != nil || len(ws) != 1 || ws[0].ID != "c" {
			t.Fatalf("queue after the withdrawal: %+v %v, want only c", ws, err)
		}
		if ready, err := b.Withdraw(ctx, req("b")); err != nil || len(ready) != 0 {
			t.Fatalf("withdraw b again: %+v %v", ready, err)
		}
		ready, err := b.Release(ctx, adm.Blockers[0])
		if err != nil || len(ready) != 1 || ready[0].ID != "c" {
			t.Fatalf("release a: ready %+v %v, want c", ready, err)
		}
		if adm, err := b.Acquire(ctx, req("c")); err != nil || adm.Outcome != claims.Granted {
			t.Fatalf("c after the release: %+v %v, want granted", adm, err)
		}
	})
}

// The broker reads the items deployed brokers wrote for shared claims (pk
// "claims#<ns>#<instance>", sk -3, a version v and the space as JSON) and
// writes them back in the same layout at the next version.
func TestBrokerKeepsTheItemLayout(t *testing.T) {
	ctx := claimsCtx(t)
	client := testEnv.Clients().DynamoDB
	b := New(client, testEnv.Table)
	ns, inst := "layout"+ids.New("n"), "db1"
	pk := "claims#" + ns + "#" + inst
	stored := `{"namespace":"` + ns + `","instance":"db1","grants":[{"id":"g1","session":"s1","turn":"t1","toolCall":"tc1",` +
		`"claims":[{"namespace":"` + ns + `","instance":"db1","key":"a","access":"write","shared":true}],"granted":"2031-01-02T03:04:05Z"}],` +
		`"waiters":[{"id":"g2","session":"s2","claims":[{"namespace":"` + ns + `","instance":"db1","key":"a/b","access":"read","shared":true}],` +
		`"seq":3,"arrived":"2031-01-02T03:04:06Z","seen":"2031-01-02T03:04:06Z"}],"nextSeq":3}`
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(testEnv.Table), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberN{Value: "-3"},
		"v": &types.AttributeValueMemberN{Value: "7"}, "space": &types.AttributeValueMemberS{Value: stored},
	}}); err != nil {
		t.Fatal(err)
	}
	gs, ws, err := b.Grants(ctx, claims.SpaceKey{Shared: true, Namespace: ns, Instance: inst})
	if err != nil || len(gs) != 1 || gs[0].ToolCall != "tc1" || len(ws) != 1 || ws[0].Seq != 3 {
		t.Fatalf("read: grants %+v waiters %+v %v", gs, ws, err)
	}
	b.Clock = func() time.Time { return time.Date(2031, 1, 2, 3, 5, 0, 0, time.UTC) }
	if _, err := b.Release(ctx, gs[0]); err != nil {
		t.Fatal(err)
	}
	res, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(testEnv.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberN{Value: "-3"}}})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := res.Item["v"].(*types.AttributeValueMemberN)
	body, _ := res.Item["space"].(*types.AttributeValueMemberS)
	if v == nil || v.Value != "8" || body == nil {
		t.Fatalf("written item %v, want v 8 and a space", res.Item)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body.Value), &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["grants"]; ok || string(raw["nextSeq"]) != "3" || string(raw["instance"]) != `"db1"` || raw["waiters"] == nil {
		t.Fatalf("written space %s: want no grants, the waiter and nextSeq 3", body.Value)
	}
}

// onBrokerTables runs a broker test on the emulator's table and on one in
// memory (internal/memtable), the table the engine's tests keep claims on.
func onBrokerTables(t *testing.T, run func(t *testing.T, client API, table string)) {
	t.Run("kumo", func(t *testing.T) { t.Parallel(); run(t, testEnv.Clients().DynamoDB, testEnv.Table) })
	t.Run("memory", func(t *testing.T) { t.Parallel(); run(t, memtable.New(), "memory") })
}
