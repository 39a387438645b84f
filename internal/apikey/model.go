package apikey

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync"

	"github.com/baton-run/baton/internal/model"
)

// Model is a provider's model whose key comes from a Cache. It builds the
// provider's model with the cached key on first use, and again whenever
// the key changes. A call the provider refuses for auth (model.Auth)
// before it streamed anything refreshes the key; when the store holds
// another, the call is made once more with it. A refusal after events
// were streamed refreshes the key for the next call. It is safe for
// concurrent use.
type Model struct {
	cache *Cache
	ref   Ref
	build func(ctx context.Context, key string) (model.Model, error)

	mu    sync.Mutex
	key   string
	inner model.Model
}

var (
	_ model.Model   = (*Model)(nil)
	_ model.Counter = (*Model)(nil)
)

// NewModel returns the model build makes with ref's key from cache.
func NewModel(cache *Cache, ref Ref, build func(ctx context.Context, key string) (model.Model, error)) *Model {
	return &Model{cache: cache, ref: ref, build: build}
}

// current returns the model for the cached key, building it when the key
// is new.
func (m *Model) current(ctx context.Context) (model.Model, string, error) {
	key, err := m.cache.Key(ctx, m.ref)
	if err != nil {
		return nil, "", fetchFailure(err)
	}
	return m.withKey(ctx, key)
}

func (m *Model) withKey(ctx context.Context, key string) (model.Model, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.inner == nil || m.key != key {
		inner, err := m.build(ctx, key)
		if err != nil {
			return nil, "", &model.Error{Kind: model.InvalidRequest, Err: redacted(err, key)}
		}
		m.inner, m.key = inner, key
	}
	return m.inner, key, nil
}

// refreshed returns the model for a key other than stale, and that key,
// or false when the store still holds stale (or cannot be read).
func (m *Model) refreshed(ctx context.Context, stale string) (model.Model, string, bool) {
	key, err := m.cache.Refresh(ctx, m.ref, stale)
	if err != nil || key == stale {
		return nil, "", false
	}
	inner, _, err := m.withKey(ctx, key)
	return inner, key, err == nil
}

// Stream implements model.Model.
func (m *Model) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		inner, key, err := m.current(ctx)
		if err != nil {
			yield(model.Event{}, err)
			return
		}
		streamed, err, stopped := relay(inner.Stream(ctx, req), yield)
		if stopped || err == nil {
			return
		}
		if model.KindOf(err) == model.Auth {
			next, fresh, ok := m.refreshed(ctx, key)
			if ok && !streamed {
				_, err2, stopped := relay(next.Stream(ctx, req), yield)
				if !stopped && err2 != nil {
					yield(model.Event{}, redacted(err2, key, fresh))
				}
				return
			}
		}
		yield(model.Event{}, redacted(err, key))
	}
}

// relay yields seq's events and returns whether any was yielded, the
// error that ended it, and whether the consumer stopped.
func relay(seq iter.Seq2[model.Event, error], yield func(model.Event, error) bool) (streamed bool, err error, stopped bool) {
	for ev, err := range seq {
		if err != nil {
			return streamed, err, false
		}
		streamed = true
		if !yield(ev, nil) {
			return true, nil, true
		}
	}
	return streamed, nil, false
}

// CountTokens implements model.Counter when the provider's model does; a
// refused key is refreshed and the count asked once more.
func (m *Model) CountTokens(ctx context.Context, req model.Request) (int64, error) {
	inner, key, err := m.current(ctx)
	if err != nil {
		return 0, err
	}
	counter, ok := inner.(model.Counter)
	if !ok {
		return 0, errors.New("apikey: the provider's model counts no tokens")
	}
	n, err := counter.CountTokens(ctx, req)
	if err != nil && model.KindOf(err) == model.Auth {
		if next, fresh, ok := m.refreshed(ctx, key); ok {
			if c, ok := next.(model.Counter); ok {
				n, err := c.CountTokens(ctx, req)
				return n, redacted(err, key, fresh)
			}
		}
	}
	return n, redacted(err, key)
}

// fetchFailure classifies a key that could not be fetched: a permanent
// failure fails the turn (model.Auth), any other is the store's fault,
// ridden out as the model's unavailability would be.
func fetchFailure(err error) error {
	var fe *FetchError
	if errors.As(err, &fe) && fe.Permanent {
		return &model.Error{Kind: model.Auth, Err: err}
	}
	return &model.Error{Kind: model.Unavailable, Err: err}
}

// redacted returns err with every key in its text replaced, keeping its
// kind, status and retry hint; an error that quotes no key, and nil, are
// returned as they are.
func redacted(err error, keys ...string) error {
	if err == nil || !quotes(err.Error(), keys) {
		return err
	}
	out := &model.Error{Kind: model.Other}
	text := err.Error()
	var me *model.Error
	if errors.As(err, &me) {
		out.Kind, out.Status, out.RetryAfter = me.Kind, me.Status, me.RetryAfter
		if me.Err != nil && err == error(me) {
			text = me.Err.Error()
		}
	}
	for _, k := range keys {
		if k != "" {
			text = strings.ReplaceAll(text, k, "[redacted]")
		}
	}
	out.Err = errors.New(text)
	return out
}

func quotes(s string, keys []string) bool {
	for _, k := range keys {
		if k != "" && strings.Contains(s, k) {
			return true
		}
	}
	return false
}
