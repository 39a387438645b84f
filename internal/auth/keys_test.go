package auth_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/auth"
	"github.com/baton-run/baton/internal/auth/authtest"
)

// clock is an injected clock the test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now()} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// keyed is a verifier of is on clk, reading the JWKS directly.
func keyed(t *testing.T, is *authtest.Issuer, clk *clock) *auth.Verifier {
	t.Helper()
	return verifier(t, auth.Config{Issuer: is.URL, Audience: is.Audience, JWKSURL: is.JWKSURL(), Now: clk.Now})
}

// fetches asserts the issuer's JWKS was fetched want times in all.
func fetches(t *testing.T, is *authtest.Issuer, want int64, when string) {
	t.Helper()
	if n := is.KeyFetches.Load(); n != want {
		t.Fatalf("%s: the JWKS was fetched %d times in all, want %d", when, n, want)
	}
}

func accepts(t *testing.T, v *auth.Verifier, tok, when string) {
	t.Helper()
	if sub, err := v.Verify(t.Context(), tok); err != nil || sub == "" {
		t.Fatalf("%s: Verify = %q, %v; want accepted", when, sub, err)
	}
}

func refuses(t *testing.T, v *auth.Verifier, tok, when string) {
	t.Helper()
	if sub, err := v.Verify(t.Context(), tok); err == nil {
		t.Fatalf("%s: Verify = %q; want refused", when, sub)
	}
}

// TestRevokedKeyRefusedAfterKeyAge: a key the issuer removed from its JWKS
// is trusted until the cached keys reach the JWKS's max-age, and refused
// from then on, with one fetch; the key that replaced it is accepted.
func TestRevokedKeyRefusedAfterKeyAge(t *testing.T) {
	is, clk := issuer(t), newClock()
	is.SetKeysHeader("Cache-Control", "public, max-age=60")
	v := keyed(t, is, clk)
	old := is.Token("alice")
	accepts(t, v, old, "before the rotation")
	fetches(t, is, 1, "first use")

	if _, err := is.Rotate(); err != nil {
		t.Fatal(err)
	}
	is.Revoke("rsa-1")
	clk.Add(60*time.Second - time.Millisecond)
	accepts(t, v, old, "within the keys' age")
	fetches(t, is, 1, "within the keys' age")
	clk.Add(time.Millisecond)
	refuses(t, v, old, "at the keys' age")
	fetches(t, is, 2, "at the keys' age")
	accepts(t, v, is.Token("alice"), "the new key")
	refuses(t, v, old, "again")
	fetches(t, is, 2, "after the refetch")
}

// TestKeyAge: the cached keys' age is the JWKS response's max-age less
// its Age, capped at MaxKeyAge, at least MinKeyAge, and DefaultKeyAge
// without one: a token refetches just then, and not a millisecond before.
func TestKeyAge(t *testing.T) {
	is := issuer(t)
	for _, c := range []struct {
		cacheControl, age string
		want              time.Duration
	}{
		{"", "", auth.DefaultKeyAge},
		{"max-age=60", "", time.Minute},
		{"public, max-age=86400, must-revalidate", "", auth.MaxKeyAge},
		{"max-age=60", "20", 40 * time.Second},
		{"max-age=60", "600", auth.MinKeyAge},
		{"s-maxage=5, max-age=100", "", 100 * time.Second},
		{"no-store", "", auth.MinKeyAge},
		{"max-age=0", "", auth.MinKeyAge},
		{"max-age=soon", "", auth.MinKeyAge},
		{"public", "", auth.DefaultKeyAge},
	} {
		name := fmt.Sprintf("Cache-Control %q Age %q", c.cacheControl, c.age)
		is.SetKeysHeader("Cache-Control", c.cacheControl)
		is.SetKeysHeader("Age", c.age)
		clk := newClock()
		v, tok := keyed(t, is, clk), is.Token("alice")
		n := is.KeyFetches.Load()
		accepts(t, v, tok, name)
		clk.Add(c.want - time.Millisecond)
		accepts(t, v, tok, name)
		fetches(t, is, n+1, name+", just before its age")
		clk.Add(time.Millisecond)
		accepts(t, v, tok, name)
		fetches(t, is, n+2, name+", at its age")
	}
}

// TestUnknownKeyRefetchLimited: tokens with kids the JWKS lacks refetch it
// at most once per UnknownKeyRefetch, whatever their number; a key the
// issuer publishes is accepted once that long has passed since the last
// fetch (and no later than the keys' age).
func TestUnknownKeyRefetchLimited(t *testing.T) {
	is, clk := issuer(t), newClock()
	v := keyed(t, is, clk)
	good := is.Claims("alice")
	accepts(t, v, is.Sign(good), "warm")
	for i := range 100 {
		clk.Add(100 * time.Millisecond) // 10 s in all
		refuses(t, v, is.SignOtherKey(fmt.Sprintf("random-%d", i), good), "a random kid")
	}
	fetches(t, is, 1, "100 random kids within UnknownKeyRefetch")

	clk.Add(auth.UnknownKeyRefetch - 10*time.Second)
	for i := range 100 {
		refuses(t, v, is.SignOtherKey(fmt.Sprintf("later-%d", i), good), "a random kid")
	}
	fetches(t, is, 2, "100 random kids once UnknownKeyRefetch passed")

	kid, err := is.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Second)
	refuses(t, v, is.SignWith(kid, good), "a new key a second after a fetch")
	fetches(t, is, 2, "a new key a second after a fetch")
	clk.Add(auth.UnknownKeyRefetch - time.Second)
	accepts(t, v, is.SignWith(kid, good), "a new key UnknownKeyRefetch after a fetch")
	fetches(t, is, 3, "a new key UnknownKeyRefetch after a fetch")
	accepts(t, v, is.SignWith("rsa-1", good), "the old key, still published")
}

// TestBadSignatureNeverFetches: a bad signature under a kid the JWKS holds,
// or under no kid, never fetches the JWKS, however many and however late
// (within the keys' age).
func TestBadSignatureNeverFetches(t *testing.T) {
	is, clk := issuer(t), newClock()
	v := keyed(t, is, clk)
	good := is.Claims("alice")
	accepts(t, v, is.Sign(good), "warm")
	clk.Add(auth.UnknownKeyRefetch)
	for range 100 {
		refuses(t, v, is.SignWrongKey(good), "a bad signature, known kid")
		refuses(t, v, is.SignOtherKey("", good), "a bad signature, no kid")
		clk.Add(2 * time.Second) // 200 s in all: past UnknownKeyRefetch, within DefaultKeyAge
	}
	fetches(t, is, 1, "200 bad signatures")
}

// TestKeyFetchSingleFlight: once the keys expire, concurrent tokens, good
// ones and ones with unknown kids, share one fetch.
func TestKeyFetchSingleFlight(t *testing.T) {
	is, clk := issuer(t), newClock()
	is.SetKeysHeader("Cache-Control", "max-age=60")
	v := keyed(t, is, clk)
	good := is.Claims("alice")
	accepts(t, v, is.Sign(good), "warm")
	arrived, release := is.HoldKeys()
	defer release()
	clk.Add(time.Minute)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 50 {
		wg.Go(func() {
			if _, err := v.Verify(t.Context(), is.Sign(good)); err != nil {
				errs <- fmt.Errorf("a good token: %w", err)
			}
		})
		wg.Go(func() {
			if _, err := v.Verify(t.Context(), is.SignOtherKey(fmt.Sprintf("k%d", i), good)); err == nil {
				errs <- fmt.Errorf("an unknown kid was accepted")
			}
		})
	}
	// Hold the fetch until it reaches the issuer, so that the others
	// arrive while it is in flight.
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Error("no fetch reached the issuer")
	}
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	fetches(t, is, 2, "100 concurrent tokens on expired keys")
}

// TestExpiredKeysIssuerDown: keys past their age are not used while the
// JWKS cannot be fetched; the fetch is retried at most once per MinKeyAge,
// and tokens are accepted again once it succeeds.
func TestExpiredKeysIssuerDown(t *testing.T) {
	is, clk := issuer(t), newClock()
	is.SetKeysHeader("Cache-Control", "max-age=60")
	v := keyed(t, is, clk)
	tok := is.Token("alice")
	accepts(t, v, tok, "warm")
	is.SetKeysStatus(http.StatusServiceUnavailable)
	clk.Add(time.Minute)
	for range 100 {
		refuses(t, v, tok, "expired keys, issuer down")
	}
	fetches(t, is, 2, "100 tokens on expired keys, issuer down")
	clk.Add(auth.MinKeyAge)
	refuses(t, v, tok, "a second later, issuer down")
	fetches(t, is, 3, "a second later")
	is.SetKeysStatus(0)
	refuses(t, v, tok, "issuer back, within a second of the last try")
	clk.Add(auth.MinKeyAge)
	accepts(t, v, tok, "issuer back")
	fetches(t, is, 4, "issuer back")
}

// TestDiscoveryRetryLimited: while the issuer's discovery document cannot
// be had, tokens are refused and discovery is retried at most once per
// MinKeyAge, however many tokens come.
func TestDiscoveryRetryLimited(t *testing.T) {
	var gets atomic.Int64
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		gets.Add(1)
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(down.Close)
	is, clk := issuer(t), newClock()
	v := verifier(t, auth.Config{Issuer: down.URL, Audience: is.Audience, Now: clk.Now})
	tok := is.Sign(with(is.Claims("alice"), "iss", down.URL))
	for range 100 {
		refuses(t, v, tok, "discovery down")
	}
	if n := gets.Load(); n != 1 {
		t.Fatalf("100 tokens while discovery is down made %d requests, want 1", n)
	}
	clk.Add(auth.MinKeyAge)
	refuses(t, v, tok, "a second later")
	if n := gets.Load(); n != 2 {
		t.Fatalf("a second later: %d requests in all, want 2", n)
	}
}

// TestJWKSKeysSkipped: a JWKS key that is symmetric, for encryption, of an
// algorithm not accepted or of a type not understood is skipped; the
// others are used.
func TestJWKSKeysSkipped(t *testing.T) {
	is, clk := issuer(t), newClock()
	mixed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := http.Get(is.JWKSURL())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		var set struct{ Keys []map[string]any }
		if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		enc := maps.Clone(set.Keys[0])
		enc["kid"], enc["use"] = "enc-1", "enc"
		hs := maps.Clone(set.Keys[0])
		hs["kid"], hs["alg"] = "hs-1", "HS256"
		set.Keys = append([]map[string]any{
			{"kty": "oct", "kid": "oct-1", "k": "c2VjcmV0"},
			{"kty": "OKP", "crv": "X448", "kid": "x448-1", "x": "AAAA"},
			{"kty": "mystery", "kid": "m-1"},
			enc, hs,
		}, set.Keys...)
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(mixed.Close)
	v := verifier(t, auth.Config{Issuer: is.URL, Audience: is.Audience, JWKSURL: mixed.URL, Now: clk.Now})
	good := is.Claims("alice")
	accepts(t, v, is.Sign(good), "RS256 beside skipped keys")
	accepts(t, v, is.SignES256(good), "ES256 beside skipped keys")
	// The RSA key, published again as an encryption key and as an HS256
	// key: neither verifies a signature.
	refuses(t, v, is.SignUnder("enc-1", "rsa-1", good), "a key for encryption")
	refuses(t, v, is.SignUnder("hs-1", "rsa-1", good), "a key for HS256")
	accepts(t, v, is.SignUnder("rsa-1", "rsa-1", good), "the same key as published for RS256")
}
