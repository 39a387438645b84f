package apikey_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/baton-run/baton/internal/apikey"
	"github.com/baton-run/baton/internal/model"
)

func TestParseRef(t *testing.T) {
	for in, want := range map[string]apikey.Ref{
		"baton/anthropic": {Store: apikey.SecretsManager, ID: "baton/anthropic"},
		"arn:aws:secretsmanager:eu-west-1:123456789012:secret:baton/k-AbC123": {Store: apikey.SecretsManager,
			ID: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:baton/k-AbC123"},
		"ssm:/baton/anthropic": {Store: apikey.ParameterStore, ID: "/baton/anthropic"},
		"ssm:plain":            {Store: apikey.ParameterStore, ID: "plain"},
		"arn:aws:ssm:eu-west-1:123456789012:parameter/baton/k": {Store: apikey.ParameterStore,
			ID: "arn:aws:ssm:eu-west-1:123456789012:parameter/baton/k"},
	} {
		got, err := apikey.ParseRef(in)
		if err != nil || got != want {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if again, err := apikey.ParseRef(got.String()); err != nil || again != got {
			t.Errorf("ParseRef(%q.String() = %q) = %+v, %v", in, got.String(), again, err)
		}
	}
	for _, bad := range []string{"", "ssm:", " baton/k", "baton key", "arn:aws:s3:::bucket/key",
		"arn:aws:secretsmanager:eu-west-1:123456789012:rotation:x", "arn:aws:ssm:eu-west-1:123456789012:document/x", "arn:aws"} {
		if got, err := apikey.ParseRef(bad); err == nil {
			t.Errorf("ParseRef(%q) = %+v, want an error", bad, got)
		}
	}
}

// store is a Fetcher on a map, counting fetches: the cache's logic is
// tested here; the real stores (package awsstore) on kumo.
type store struct {
	mu      sync.Mutex
	values  map[apikey.Ref]string
	err     error
	fetches atomic.Int64
}

func (s *store) Fetch(_ context.Context, ref apikey.Ref) (string, error) {
	s.fetches.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return "", s.err
	}
	return s.values[ref], nil
}

func (s *store) set(ref apikey.Ref, v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values[ref] = v
}

var ref = apikey.Ref{Store: apikey.SecretsManager, ID: "k"}

// TestCacheFetchesOnceAndOncePerRefresh checks that concurrent first uses
// share one fetch, and concurrent refreshes of one refused key another.
func TestCacheFetchesOnceAndOncePerRefresh(t *testing.T) {
	ctx := context.Background()
	s := &store{values: map[apikey.Ref]string{ref: "  one\n"}}
	c := apikey.NewCache(s)
	run := func(f func() (string, error), want string) {
		t.Helper()
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if got, err := f(); err != nil || got != want {
					t.Errorf("got %q, %v; want %q", got, err, want)
				}
			})
		}
		wg.Wait()
	}
	run(func() (string, error) { return c.Key(ctx, ref) }, "one")
	if n := s.fetches.Load(); n != 1 {
		t.Fatalf("8 first uses fetched %d times, want 1", n)
	}
	s.set(ref, "two")
	run(func() (string, error) { return c.Refresh(ctx, ref, "one") }, "two")
	run(func() (string, error) { return c.Key(ctx, ref) }, "two")
	if n := s.fetches.Load(); n != 2 {
		t.Fatalf("8 refreshes of one refused key fetched %d times in all, want 2", n)
	}
}

// TestCacheFailures checks a fetch error and an empty value: FetchErrors
// naming the Ref, the empty one permanent, neither cached.
func TestCacheFailures(t *testing.T) {
	ctx := context.Background()
	s := &store{values: map[apikey.Ref]string{ref: " \n"}}
	c := apikey.NewCache(s)
	var fe *apikey.FetchError
	if _, err := c.Key(ctx, ref); !errors.As(err, &fe) || !fe.Permanent || !errors.Is(err, apikey.ErrEmpty) || fe.Ref != ref {
		t.Fatalf("an empty value: %v, want a permanent FetchError wrapping ErrEmpty", err)
	}
	s.err = errors.New("throttled")
	if _, err := c.Key(ctx, ref); !errors.As(err, &fe) || fe.Permanent {
		t.Fatalf("a store's error: %v, want a transient FetchError", err)
	}
	s.err = nil
	s.set(ref, "k1")
	if got, err := c.Key(ctx, ref); err != nil || got != "k1" {
		t.Fatalf("after the failures: %q, %v", got, err)
	}
	if _, err := apikey.NewCache(nil).Key(ctx, ref); !errors.As(err, &fe) || !fe.Permanent {
		t.Fatalf("no store: %v, want a permanent FetchError", err)
	}
}

// keyed is a provider's model that accepts one key: any other gets an
// auth error quoting it, as some APIs do; after refuseAfter events it
// refuses mid-stream.
type keyed struct {
	key         string
	valid       *string // what the API accepts now
	refuseAfter *int    // events streamed before an answer
	calls       *atomic.Int64
}

func (k keyed) Stream(context.Context, model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		k.calls.Add(1)
		for range *k.refuseAfter {
			if !yield(model.Event{Type: model.TextDelta, Text: "x"}, nil) {
				return
			}
		}
		if k.key != *k.valid {
			yield(model.Event{}, &model.Error{Kind: model.Auth, Status: 401, Err: errors.New("Incorrect API key provided: " + k.key)})
			return
		}
		yield(model.Event{Type: model.Finish, Stop: model.StopEnd}, nil)
	}
}

func collect(seq iter.Seq2[model.Event, error]) ([]model.Event, error) {
	var evs []model.Event
	for ev, err := range seq {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// TestModelRefreshesARefusedKey checks the wrapper: a rotated key is
// fetched after the refusal and the call made once more; a key the store
// still holds fails with model.Auth and the key redacted; a refusal after
// events were streamed is not redone, but the next call has the new key.
func TestModelRefreshesARefusedKey(t *testing.T) {
	ctx := context.Background()
	s := &store{values: map[apikey.Ref]string{ref: "sk-one"}}
	valid, after := "sk-one", 0
	var calls atomic.Int64
	m := apikey.NewModel(apikey.NewCache(s), ref, func(_ context.Context, key string) (model.Model, error) {
		return keyed{key: key, valid: &valid, refuseAfter: &after, calls: &calls}, nil
	})
	if _, err := collect(m.Stream(ctx, model.Request{})); err != nil || s.fetches.Load() != 1 {
		t.Fatalf("first call: %v, %d fetches", err, s.fetches.Load())
	}

	valid = "sk-two" // revoked, and the store still holds sk-one
	_, err := collect(m.Stream(ctx, model.Request{}))
	if model.KindOf(err) != model.Auth || strings.Contains(err.Error(), "sk-one") || !strings.Contains(err.Error(), "[redacted]") {
		t.Fatalf("a revoked key the store still holds: %v, want model.Auth with the key redacted", err)
	}
	if n := s.fetches.Load(); n != 2 {
		t.Fatalf("the refusal fetched %d times in all, want 2", n)
	}

	s.set(ref, "sk-two") // rotated
	calls.Store(0)
	if _, err := collect(m.Stream(ctx, model.Request{})); err != nil || calls.Load() != 2 || s.fetches.Load() != 3 {
		t.Fatalf("after the rotation: %v, %d calls, %d fetches; want success on the second call, 3 fetches", err, calls.Load(), s.fetches.Load())
	}

	s.set(ref, "sk-three")
	valid, after = "sk-three", 1
	calls.Store(0)
	evs, err := collect(m.Stream(ctx, model.Request{}))
	if model.KindOf(err) != model.Auth || len(evs) != 1 || calls.Load() != 1 {
		t.Fatalf("a refusal mid-stream: %d events, %d calls, %v; want the error, not a redo", len(evs), calls.Load(), err)
	}
	if _, err := collect(m.Stream(ctx, model.Request{})); err != nil || calls.Load() != 2 {
		t.Fatalf("the next call: %v, %d calls; want the refreshed key", err, calls.Load())
	}
}

// TestModelFetchFailureKinds checks that a key that cannot be fetched
// fails the call as model.Auth when permanent, else model.Unavailable.
func TestModelFetchFailureKinds(t *testing.T) {
	ctx := context.Background()
	build := func(context.Context, string) (model.Model, error) { return nil, errors.New("not called") }
	for _, tc := range []struct {
		err  error
		want model.ErrorKind
	}{
		{&apikey.FetchError{Ref: ref, Permanent: true, Err: errors.New("not found")}, model.Auth},
		{errors.New("connection reset"), model.Unavailable},
	} {
		m := apikey.NewModel(apikey.NewCache(&store{err: tc.err}), ref, build)
		if _, err := collect(m.Stream(ctx, model.Request{})); model.KindOf(err) != tc.want {
			t.Errorf("fetch error %v: %v, want kind %s", tc.err, err, tc.want)
		}
	}
}
