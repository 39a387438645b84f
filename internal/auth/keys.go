package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// The key cache's bounds. Keys fetched from the JWKS are trusted for the
// response's Cache-Control max-age (less its Age header), at least
// MinKeyAge and at most MaxKeyAge, and for DefaultKeyAge when it has
// none; after that a token is verified only once a fetch has succeeded
// again, so a key the issuer removed is refused at most that long after.
// A token whose kid is not among the cached keys refetches the JWKS only
// when no fetch started in the last UnknownKeyRefetch; a token whose kid is
// known (or that names none) never does, whatever its signature.
const (
	MaxKeyAge         = 5 * time.Minute
	DefaultKeyAge     = 5 * time.Minute
	MinKeyAge         = time.Second
	UnknownKeyRefetch = 30 * time.Second
	// keysTimeout bounds one fetch of the JWKS.
	keysTimeout = 10 * time.Second
	// maxJWKS bounds the JWKS response read.
	maxJWKS = 1 << 20
)

// errUnknownKey is a token's kid that is not among the keys.
var errUnknownKey = errors.New("auth: no key of the JWKS has the token's key id")

// keySet is an oidc.KeySet over the issuer's JWKS whose cached keys
// expire (see MaxKeyAge) and whose refetches are limited and single-flight.
type keySet struct {
	url    string
	client *http.Client
	now    func() time.Time
	algs   []jose.SignatureAlgorithm
	log    *slog.Logger

	mu        sync.Mutex
	keys      []jose.JSONWebKey
	expires   time.Time // the keys are not used from then on
	attempted time.Time // the start of the last fetch, whatever came of it
	inflight  *keyFetch
}

// keyFetch is the one fetch in flight; done closes when it ends.
type keyFetch struct {
	done chan struct{}
	keys []jose.JSONWebKey
	err  error
}

func newKeySet(url string, c Config) *keySet {
	algs := make([]jose.SignatureAlgorithm, len(c.Algorithms))
	for i, a := range c.Algorithms {
		algs[i] = jose.SignatureAlgorithm(a)
	}
	return &keySet{url: url, client: c.HTTPClient, now: c.Now, algs: algs, log: c.Log}
}

// VerifySignature implements oidc.KeySet: it returns raw's payload if a
// key of the JWKS with raw's kid (any key when raw names none) verifies its
// signature.
func (ks *keySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSigned(raw, ks.algs)
	if err != nil {
		return nil, fmt.Errorf("auth: malformed token: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("auth: the token does not have exactly one signature")
	}
	kid := jws.Signatures[0].Header.KeyID
	keys, err := ks.fresh(ctx)
	if err != nil {
		return nil, err
	}
	payload, err := verifyWith(jws, keys, kid)
	if !errors.Is(err, errUnknownKey) {
		return payload, err
	}
	if keys, err = ks.refetch(ctx); err != nil {
		return nil, fmt.Errorf("%w: %w", errUnknownKey, err)
	}
	return verifyWith(jws, keys, kid)
}

// verifyWith verifies jws with the keys of kid, or all keys when kid is
// empty; errUnknownKey when kid is set and no key has it.
func verifyWith(jws *jose.JSONWebSignature, keys []jose.JSONWebKey, kid string) ([]byte, error) {
	known := false
	for i := range keys {
		if kid != "" && keys[i].KeyID != kid {
			continue
		}
		known = true
		if payload, err := jws.Verify(&keys[i]); err == nil {
			return payload, nil
		}
	}
	if !known && kid != "" {
		return nil, fmt.Errorf("%w (%q)", errUnknownKey, kid)
	}
	return nil, errors.New("auth: the signature does not verify")
}

// fresh returns keys younger than their age: the cached ones, or those of
// a fetch (the one in flight, or a new one if the last one started at
// least MinKeyAge ago).
func (ks *keySet) fresh(ctx context.Context) ([]jose.JSONWebKey, error) {
	ks.mu.Lock()
	if ks.now().Before(ks.expires) {
		defer ks.mu.Unlock()
		return ks.keys, nil
	}
	f := ks.startLocked(ctx, MinKeyAge)
	ks.mu.Unlock()
	if f == nil {
		return nil, fmt.Errorf("auth: the JWKS's keys have expired and the last fetch failed; the next is at most %s away", MinKeyAge)
	}
	return f.wait(ctx)
}

// refetch fetches the keys for a kid the cached ones lack: joins the fetch
// in flight, or starts one if none started in the last UnknownKeyRefetch.
func (ks *keySet) refetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	ks.mu.Lock()
	f := ks.startLocked(ctx, UnknownKeyRefetch)
	ks.mu.Unlock()
	if f == nil {
		return nil, fmt.Errorf("auth: the JWKS was fetched less than %s ago", UnknownKeyRefetch)
	}
	return f.wait(ctx)
}

// startLocked returns the fetch in flight, or starts one if the last one
// started at least gap ago; nil if neither. ks.mu is held.
func (ks *keySet) startLocked(ctx context.Context, gap time.Duration) *keyFetch {
	if ks.inflight != nil {
		return ks.inflight
	}
	now := ks.now()
	if !ks.attempted.IsZero() && now.Sub(ks.attempted) < gap {
		return nil
	}
	f := &keyFetch{done: make(chan struct{})}
	ks.inflight, ks.attempted = f, now
	// The fetch outlives a caller that gives up; its result serves the
	// others.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keysTimeout)
	go func() {
		defer cancel()
		keys, age, err := ks.get(fctx)
		ks.mu.Lock()
		defer ks.mu.Unlock()
		if err == nil {
			// The age counts from the fetch's start: the keys are no older.
			ks.keys, ks.expires = keys, now.Add(age)
			ks.log.DebugContext(fctx, "auth: fetched the JWKS", "url", ks.url, "keys", len(keys), "age", age)
		} else {
			ks.log.ErrorContext(fctx, "auth: fetch the JWKS", "url", ks.url, "err", err)
		}
		f.keys, f.err, ks.inflight = keys, err, nil
		close(f.done)
	}()
	return f
}

// wait returns f's keys once it is done: they arrived after the caller
// asked, so they are as fresh as keys get (even if the fetch took longer
// than their age).
func (f *keyFetch) wait(ctx context.Context) ([]jose.JSONWebKey, error) {
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("auth: waiting for the JWKS: %w", ctx.Err())
	case <-f.done:
		return f.keys, f.err
	}
}

// get fetches the JWKS and returns its usable keys and how long they may
// be trusted.
func (ks *keySet) get(ctx context.Context) ([]jose.JSONWebKey, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ks.url, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("auth: JWKS request: %w", err)
	}
	// Past any cache on the way: the age is the issuer's to say.
	req.Header.Set("Cache-Control", "no-cache")
	resp, err := ks.client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("auth: get %s: %w", ks.url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKS+1))
	switch {
	case err != nil:
		return nil, 0, fmt.Errorf("auth: read %s: %w", ks.url, err)
	case resp.StatusCode != http.StatusOK:
		return nil, 0, fmt.Errorf("auth: get %s: %s", ks.url, resp.Status)
	case len(body) > maxJWKS:
		return nil, 0, fmt.Errorf("auth: %s is over %d bytes", ks.url, maxJWKS)
	}
	keys, err := ks.parse(ctx, body)
	if err != nil {
		return nil, 0, fmt.Errorf("auth: %s: %w", ks.url, err)
	}
	return keys, keyAge(resp.Header), nil
}

// parse returns the JWKS's public signing keys for the accepted
// algorithms, skipping (and logging) any other key.
func (ks *keySet) parse(ctx context.Context, body []byte) ([]jose.JSONWebKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("not a JWKS: %w", err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err != nil {
			ks.log.DebugContext(ctx, "auth: JWKS key skipped", "err", err)
			continue
		}
		accepted := k.Algorithm == "" || slices.Contains(ks.algs, jose.SignatureAlgorithm(k.Algorithm))
		if !k.IsPublic() || !k.Valid() || !accepted || (k.Use != "" && k.Use != "sig") {
			ks.log.DebugContext(ctx, "auth: JWKS key skipped", "kid", k.KeyID, "alg", k.Algorithm, "use", k.Use)
			continue
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// keyAge is how long keys served with h may be trusted: Cache-Control's
// max-age less Age, within [MinKeyAge, MaxKeyAge]; no-store, no-cache and
// a max-age that is not a number count as 0; DefaultKeyAge when h has no
// max-age.
func keyAge(h http.Header) time.Duration {
	const capSeconds = int64(MaxKeyAge / time.Second)
	maxAge := time.Duration(-1)
	for _, dir := range strings.Split(strings.Join(h.Values("Cache-Control"), ","), ",") {
		name, val, _ := strings.Cut(strings.TrimSpace(dir), "=")
		switch strings.ToLower(name) {
		case "no-store", "no-cache":
			return MinKeyAge
		case "max-age":
			s, err := strconv.ParseInt(strings.Trim(val, `"`), 10, 64)
			if err != nil || s < 0 {
				return MinKeyAge
			}
			if a := time.Duration(min(s, capSeconds)) * time.Second; maxAge < 0 || a < maxAge {
				maxAge = a
			}
		}
	}
	if maxAge < 0 {
		return DefaultKeyAge
	}
	if s, err := strconv.ParseInt(h.Get("Age"), 10, 64); err == nil && s > 0 {
		maxAge -= time.Duration(min(s, capSeconds)) * time.Second
	}
	return min(max(maxAge, MinKeyAge), MaxKeyAge)
}
