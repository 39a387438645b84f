package apikey

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Fetcher reads a key from its store. The program registers one (package
// apikey/awsstore reaches Secrets Manager and SSM).
type Fetcher interface {
	Fetch(ctx context.Context, ref Ref) (string, error)
}

// FetchError is a key that could not be fetched. It names the Ref, never a
// value. Permanent says another try will not help (no such secret, access
// denied, a value that is not a key); the rest are the store's faults, to
// be ridden out.
type FetchError struct {
	Ref       Ref
	Permanent bool
	Err       error
}

func (e *FetchError) Error() string {
	return fmt.Sprintf("apikey: fetch %s: %v", e.Ref, e.Err)
}

func (e *FetchError) Unwrap() error { return e.Err }

// ErrEmpty is a stored value that is empty or only white space.
var ErrEmpty = errors.New("the stored value is empty")

// Cache holds the keys of one process, each fetched on first use and again
// only through Refresh. It is safe for concurrent use; concurrent callers
// of one Ref share one fetch.
type Cache struct {
	f Fetcher

	mu   sync.Mutex
	refs map[Ref]*entry
}

type entry struct {
	mu  sync.Mutex
	key string // "" until fetched
}

// NewCache returns an empty cache on f.
func NewCache(f Fetcher) *Cache { return &Cache{f: f, refs: map[Ref]*entry{}} }

func (c *Cache) entry(ref Ref) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.refs[ref]
	if e == nil {
		e = &entry{}
		c.refs[ref] = e
	}
	return e
}

// Key returns ref's key, fetching it the first time.
func (c *Cache) Key(ctx context.Context, ref Ref) (string, error) {
	e := c.entry(ref)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.key != "" {
		return e.key, nil
	}
	return c.fetch(ctx, ref, e)
}

// Refresh fetches ref's key again because stale was refused, unless the
// cached key is already another (a concurrent caller refreshed it); it
// returns the key to use now, which is stale when the store still holds it.
func (c *Cache) Refresh(ctx context.Context, ref Ref, stale string) (string, error) {
	e := c.entry(ref)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.key != "" && e.key != stale {
		return e.key, nil
	}
	return c.fetch(ctx, ref, e)
}

// fetch reads ref into e, whose lock the caller holds.
func (c *Cache) fetch(ctx context.Context, ref Ref, e *entry) (string, error) {
	if c.f == nil {
		return "", &FetchError{Ref: ref, Permanent: true, Err: errors.New("no secret store is registered in this program")}
	}
	key, err := c.f.Fetch(ctx, ref)
	if err != nil {
		var fe *FetchError
		if errors.As(err, &fe) {
			return "", err
		}
		return "", &FetchError{Ref: ref, Err: err}
	}
	key = strings.TrimSpace(key)
	if key == "" {
		return "", &FetchError{Ref: ref, Permanent: true, Err: ErrEmpty}
	}
	e.key = key
	return key, nil
}
