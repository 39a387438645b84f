package apikey

import (
	"context"
	"errors"
	"iter"

	"github.com/baton-run/baton/internal/model"
)

// Redacted returns m with key replaced by "[redacted]" in the text of the
// errors its calls return, for a key from the environment (an agent's
// apiKeyEnv): an API that quotes a refused key in its error (OpenAI's
// does) would otherwise put it in the turn's failure fact and the logs.
// An empty key returns m.
func Redacted(m model.Model, key string) model.Model {
	if key == "" {
		return m
	}
	return redacting{inner: m, key: key}
}

type redacting struct {
	inner model.Model
	key   string
}

func (r redacting) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		for ev, err := range r.inner.Stream(ctx, req) {
			if !yield(ev, redacted(err, r.key)) || err != nil {
				return
			}
		}
	}
}

// CountTokens implements model.Counter when the inner model does.
func (r redacting) CountTokens(ctx context.Context, req model.Request) (int64, error) {
	c, ok := r.inner.(model.Counter)
	if !ok {
		return 0, errors.New("apikey: the provider's model counts no tokens")
	}
	n, err := c.CountTokens(ctx, req)
	return n, redacted(err, r.key)
}
