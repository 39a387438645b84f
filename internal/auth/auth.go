package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// ErrUnauthorized is wrapped by every refusal of a token.
var ErrUnauthorized = errors.New("auth: unauthorized")

// DefaultAlgorithms are the signature algorithms accepted when
// Config.Algorithms is empty: asymmetric ones only.
var DefaultAlgorithms = []string{
	oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512, oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA,
}

// Config configures a Verifier.
type Config struct {
	// Issuer is the iss every token must carry, exactly.
	Issuer string
	// Audience must be in the token's aud, or be its client_id when it has
	// no aud.
	Audience string
	// JWKSURL is where the issuer's keys are; empty discovers it from
	// Issuer + "/.well-known/openid-configuration" on first use.
	JWKSURL string
	// Algorithms are the accepted signature algorithms; empty means
	// DefaultAlgorithms. "none" and HMAC algorithms are never accepted.
	Algorithms []string
	// HTTPClient fetches discovery and keys; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Now is the clock for the tokens' expiry and the cached keys' age; nil
	// means time.Now.
	Now func() time.Time
	// Log receives refusals and key fetches (debug) and key fetch failures
	// (error); nil discards them.
	Log *slog.Logger
}

// Verifier checks bearer tokens. It is safe for concurrent use.
type Verifier struct {
	c Config

	mu     sync.Mutex
	v      *oidc.IDTokenVerifier
	failed time.Time // the last failed discovery
}

// New returns a Verifier for c. It fetches nothing yet.
func New(c Config) (*Verifier, error) {
	if c.Issuer == "" || c.Audience == "" {
		return nil, errors.New("auth: an issuer and an audience are required")
	}
	if len(c.Algorithms) == 0 {
		c.Algorithms = DefaultAlgorithms
	}
	for _, a := range c.Algorithms {
		if !slices.Contains(DefaultAlgorithms, a) {
			return nil, fmt.Errorf("auth: algorithm %q is not an accepted asymmetric JWS algorithm", a)
		}
	}
	if c.HTTPClient == nil {
		c.HTTPClient = http.DefaultClient
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return &Verifier{c: c}, nil
}

// verifier returns the go-oidc verifier, discovering the JWKS on first use;
// a failed discovery is retried on a later call, at most once per
// MinKeyAge.
func (v *Verifier) verifier(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.v != nil {
		return v.v, nil
	}
	if !v.failed.IsZero() && v.c.Now().Sub(v.failed) < MinKeyAge {
		return nil, fmt.Errorf("auth: discover %s: failed less than %s ago", v.c.Issuer, MinKeyAge)
	}
	jwks, err := v.jwksURL(ctx)
	if err != nil {
		v.failed = v.c.Now()
		return nil, err
	}
	v.v = oidc.NewVerifier(v.c.Issuer, newKeySet(jwks, v.c), &oidc.Config{
		// The audience is checked below, with client_id as well.
		SkipClientIDCheck:    true,
		SupportedSigningAlgs: v.c.Algorithms,
		Now:                  v.c.Now,
	})
	return v.v, nil
}

// jwksURL is Config.JWKSURL, or the issuer's discovered jwks_uri.
func (v *Verifier) jwksURL(ctx context.Context) (string, error) {
	if v.c.JWKSURL != "" {
		return v.c.JWKSURL, nil
	}
	var meta struct {
		JWKS string `json:"jwks_uri"`
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, v.c.HTTPClient), v.c.Issuer)
	if err != nil {
		return "", fmt.Errorf("auth: discover %s: %w", v.c.Issuer, err)
	}
	if err := p.Claims(&meta); err != nil || meta.JWKS == "" {
		return "", fmt.Errorf("auth: discover %s: no jwks_uri", v.c.Issuer)
	}
	return meta.JWKS, nil
}

// claims are the claims checked besides go-oidc's.
type claims struct {
	Audience audience `json:"aud"`
	ClientID string   `json:"client_id"`
	Expiry   *int64   `json:"exp"`
}

// Verify checks raw, a compact JWS, and returns its subject. Every refusal
// wraps ErrUnauthorized.
func (v *Verifier) Verify(ctx context.Context, raw string) (string, error) {
	ov, err := v.verifier(ctx)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	tok, err := ov.Verify(ctx, raw)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	var c claims
	if err := tok.Claims(&c); err != nil {
		return "", fmt.Errorf("%w: claims: %w", ErrUnauthorized, err)
	}
	switch {
	case c.Expiry == nil:
		return "", fmt.Errorf("%w: the token has no exp", ErrUnauthorized)
	case len(c.Audience) > 0 && !slices.Contains(c.Audience, v.c.Audience):
		return "", fmt.Errorf("%w: audience %q is not %q", ErrUnauthorized, []string(c.Audience), v.c.Audience)
	case len(c.Audience) == 0 && c.ClientID != v.c.Audience:
		return "", fmt.Errorf("%w: no aud, and client_id %q is not %q", ErrUnauthorized, c.ClientID, v.c.Audience)
	case tok.Subject == "":
		return "", fmt.Errorf("%w: the token has no sub", ErrUnauthorized)
	}
	return tok.Subject, nil
}

// Identity is an operator.Config.Identity: the subject of the request's
// "Authorization: Bearer <token>", or false when it is missing or refused.
func (v *Verifier) Identity(r *http.Request) (string, bool) {
	scheme, raw, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(raw) == "" {
		v.c.Log.DebugContext(r.Context(), "auth: no bearer token", "path", r.URL.Path)
		return "", false
	}
	sub, err := v.Verify(r.Context(), strings.TrimSpace(raw))
	if err != nil {
		v.c.Log.DebugContext(r.Context(), "auth: token refused", "path", r.URL.Path, "err", err)
		return "", false
	}
	return sub, true
}
