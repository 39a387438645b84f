package test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/auth"
	"github.com/baton-run/baton/test/harness"
)

// status sends a request to a container's door with token and returns its
// status code.
func status(ctx context.Context, c *harness.Container, method, path, token, body string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func mustStatus(t *testing.T, c *harness.Container, method, path, token, body string) int {
	t.Helper()
	code, err := status(t.Context(), c, method, path, token, body)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// until sends GET /sessions with token to c every 50 ms until it answers
// want, and returns when the first such request was sent; every other
// answer must have been sent before by (the documented bound). It gives up
// after a generous 30 s.
func until(ctx context.Context, c *harness.Container, token string, want int, by time.Time) (time.Time, error) {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		sent := time.Now()
		code, err := status(ctx, c, "GET", "/sessions", token, "")
		switch {
		case err != nil:
			return time.Time{}, err
		case code == want:
			return sent, nil
		case sent.After(by):
			return time.Time{}, fmt.Errorf("answered %d to a request sent %v past the bound", code, sent.Sub(by))
		}
	}
	return time.Time{}, fmt.Errorf("GET /sessions never answered %d in 30 s", want)
}

// inEach runs until in each container at once and returns when each first
// answered want.
func inEach(t *testing.T, boxes []*harness.Container, token string, want int, by time.Time) []time.Time {
	t.Helper()
	at, errs := make([]time.Time, len(boxes)), make([]error, len(boxes))
	var wg sync.WaitGroup
	for i, c := range boxes {
		wg.Go(func() { at[i], errs[i] = until(t.Context(), c, token, want, by) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("container %d: %v", i, err)
		}
	}
	return at
}

// TestDeployedKeyRotation: two warm operator containers (each its own
// process, each having verified a token of the issuer's key rsa-1) behind
// the Function URL model. The issuer publishes a new key, then removes
// rsa-1, with a JWKS max-age of 1 s: each container accepts the new key and
// refuses rsa-1 within that bound (every request sent more than the
// max-age after the removal is refused), and a write with rsa-1 is refused
// in both. Then 100 bad tokens (random kids, bad signatures under the known
// kid and under none) cause at most one JWKS fetch per container per
// auth.UnknownKeyRefetch.
func TestDeployedKeyRotation(t *testing.T) {
	t.Parallel()
	d := startDeployed(t, frontLimits())
	is := d.Issuer
	const maxAge = time.Second // the issuer's, under auth.MaxKeyAge: honoured as is
	is.SetKeysHeader("Cache-Control", fmt.Sprintf("public, max-age=%d", int(maxAge/time.Second)))
	boxes := []*harness.Container{d.WarmOperator(t), d.WarmOperator(t)}
	old := is.SignWith("rsa-1", is.Claims(alice))
	for i, c := range boxes {
		if code := mustStatus(t, c, "POST", "/sessions", old, `{"agent":"slow"}`); code != http.StatusCreated {
			t.Fatalf("container %d: a write with rsa-1 before the rotation: %d, want 201", i, code)
		}
	}

	kid, err := is.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	published := time.Now()
	fresh := is.SignWith(kid, is.Claims(alice))
	for i, at := range inEach(t, boxes, fresh, http.StatusOK, published.Add(maxAge)) {
		t.Logf("container %d accepted the new key %s %v after it was published (bound %v)", i, kid, at.Sub(published).Round(time.Millisecond), maxAge)
	}

	is.Revoke("rsa-1")
	revoked := time.Now()
	for i, at := range inEach(t, boxes, old, http.StatusUnauthorized, revoked.Add(maxAge)) {
		t.Logf("container %d refused the removed key rsa-1 %v after its removal (bound %v)", i, at.Sub(revoked).Round(time.Millisecond), maxAge)
	}
	before := items(t, d)
	for i, c := range boxes {
		if code := mustStatus(t, c, "POST", "/sessions", old, `{"agent":"slow"}`); code != http.StatusUnauthorized {
			t.Errorf("container %d: a write with the removed key: %d, want 401", i, code)
		}
		if code := mustStatus(t, c, "GET", "/sessions", fresh, ""); code != http.StatusOK {
			t.Errorf("container %d: the new key after the removal: %d, want 200", i, code)
		}
	}
	if after := items(t, d); after != before {
		t.Fatalf("refused writes wrote: %d items before, %d after", before, after)
	}
	badTokens(t, d, boxes, kid)
}

// badTokens sends 100 bad tokens to boxes in turn and checks the JWKS
// fetches they caused against the documented bound. The issuer's max-age
// is first raised to a day (capped at auth.MaxKeyAge) and good tokens are
// sent until the 1 s keys have expired, so no fetch is an expiry.
func badTokens(t *testing.T, d *harness.Deployed, boxes []*harness.Container, kid string) {
	is := d.Issuer
	is.SetKeysHeader("Cache-Control", "public, max-age=86400")
	switched := time.Now()
	for time.Since(switched) <= 2*time.Second {
		for i, c := range boxes {
			if code := mustStatus(t, c, "GET", "/sessions", d.Token(alice), ""); code != http.StatusOK {
				t.Fatalf("container %d: a good token: %d", i, code)
			}
		}
	}
	good := is.Claims(alice)
	start, fetched := time.Now(), is.KeyFetches.Load()
	for i := range 100 {
		var tok string
		switch i % 3 {
		case 0:
			tok = is.SignOtherKey(fmt.Sprintf("random-%d-%d", i, time.Now().UnixNano()), good)
		case 1:
			tok = is.SignOtherKey(kid, good) // the known kid, a bad signature
		default:
			tok = is.SignOtherKey("", good) // no kid, a bad signature
		}
		if code := mustStatus(t, boxes[i%len(boxes)], "GET", "/sessions", tok, ""); code != http.StatusUnauthorized {
			t.Errorf("bad token %d: %d, want 401", i, code)
		}
	}
	took, n := time.Since(start), is.KeyFetches.Load()-fetched
	bound := int64(len(boxes)) * (1 + int64(took/auth.UnknownKeyRefetch))
	t.Logf("100 bad tokens over %v caused %d JWKS fetches (bound %d: one per container per %v)", took.Round(time.Millisecond), n, bound, auth.UnknownKeyRefetch)
	if n > bound {
		t.Fatalf("100 bad tokens caused %d JWKS fetches, over the bound %d", n, bound)
	}
}
