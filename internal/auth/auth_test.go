package auth_test

import (
	"errors"
	"maps"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/auth"
	"github.com/baton-run/baton/internal/auth/authtest"
)

func issuer(t *testing.T) *authtest.Issuer {
	t.Helper()
	is, err := authtest.Start("baton-app")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(is.Close)
	return is
}

func verifier(t *testing.T, c auth.Config) *auth.Verifier {
	t.Helper()
	v, err := auth.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func with(base map[string]any, k string, v any) map[string]any {
	m := maps.Clone(base)
	if v == nil {
		delete(m, k)
	} else {
		m[k] = v
	}
	return m
}

// TestVerifyRefuses: every token that is not this issuer's, for this
// audience, unexpired and signed by a key of its JWKS is refused.
func TestVerifyRefuses(t *testing.T) {
	is := issuer(t)
	v := verifier(t, auth.Config{Issuer: is.URL, Audience: is.Audience})
	good := is.Claims("alice")
	for name, tok := range map[string]string{
		"empty":          "",
		"garbage":        "not.a.token",
		"wrong issuer":   is.Sign(with(good, "iss", "https://evil.example/")),
		"wrong audience": is.Sign(with(good, "aud", "someone-else")),
		"no audience":    is.Sign(with(good, "aud", nil)),
		"expired":        is.Sign(with(good, "exp", time.Now().Add(-time.Minute).Unix())),
		"no expiry":      is.Sign(with(good, "exp", nil)),
		"no subject":     is.Sign(with(good, "sub", nil)),
		"bad signature":  is.SignWrongKey(good),
		"alg none":       authtest.Unsigned(good),
	} {
		t.Run(name, func(t *testing.T) {
			sub, err := v.Verify(t.Context(), tok)
			if !errors.Is(err, auth.ErrUnauthorized) || sub != "" {
				t.Fatalf("Verify = %q, %v; want ErrUnauthorized", sub, err)
			}
		})
	}
}

// TestVerifyAccepts: a good token of either key, an audience among several,
// or a client_id standing for a missing aud, gives the subject; the JWKS is
// fetched once (through discovery) and cached.
func TestVerifyAccepts(t *testing.T) {
	is := issuer(t)
	v := verifier(t, auth.Config{Issuer: is.URL, Audience: is.Audience})
	good := is.Claims("alice")
	for name, tok := range map[string]string{
		"RS256":         is.Sign(good),
		"ES256":         is.SignES256(good),
		"aud array":     is.Sign(with(good, "aud", []string{"other", is.Audience})),
		"client_id":     is.Sign(with(with(good, "aud", nil), "client_id", is.Audience)),
		"RS256 again":   is.Token("alice"),
		"ES256 again":   is.SignES256(good),
		"another token": is.Sign(with(good, "iat", time.Now().Add(-time.Second).Unix())),
	} {
		sub, err := v.Verify(t.Context(), tok)
		if err != nil || sub != "alice" {
			t.Fatalf("%s: Verify = %q, %v; want alice", name, sub, err)
		}
	}
	if n := is.KeyFetches.Load(); n != 1 {
		t.Fatalf("the JWKS was fetched %d times, want once", n)
	}
}

func TestIdentity(t *testing.T) {
	is := issuer(t)
	v := verifier(t, auth.Config{Issuer: is.URL, Audience: is.Audience, JWKSURL: is.JWKSURL()})
	for hdr, want := range map[string]string{
		"":                            "",
		"Bearer":                      "",
		"Basic " + is.Token("alice"):  "",
		"Bearer " + is.Token("alice"): "alice",
		"bearer " + is.Token("bob"):   "bob",
	} {
		r := httptest.NewRequest("GET", "/sessions", nil)
		if hdr != "" {
			r.Header.Set("Authorization", hdr)
		}
		sub, ok := v.Identity(r)
		if sub != want || ok != (want != "") {
			t.Errorf("Authorization %.20q: Identity = %q, %v; want %q", hdr, sub, ok, want)
		}
	}
}

func TestNewRefusesConfig(t *testing.T) {
	for name, c := range map[string]auth.Config{
		"no issuer":   {Audience: "a"},
		"no audience": {Issuer: "https://i/"},
		"HMAC":        {Issuer: "https://i/", Audience: "a", Algorithms: []string{"HS256"}},
		"none":        {Issuer: "https://i/", Audience: "a", Algorithms: []string{"none"}},
	} {
		if _, err := auth.New(c); err == nil {
			t.Errorf("%s: New accepted %+v", name, c)
		}
	}
}
