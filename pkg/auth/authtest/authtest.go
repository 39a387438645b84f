// Package authtest is an OIDC issuer for tests: an HTTP server with a
// discovery document and a JWKS of keys generated in the test, and tokens
// signed with them (or deliberately not).
package authtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Issuer is a running test issuer. Its URL is the iss of its tokens.
type Issuer struct {
	URL      string
	Audience string
	// KeyFetches counts GETs of the JWKS.
	KeyFetches atomic.Int64

	srv   *httptest.Server
	rsa   *rsa.PrivateKey
	ec    *ecdsa.PrivateKey
	other *rsa.PrivateKey // signs tokens whose signature must not verify
}

// Start starts an issuer whose tokens carry audience. Close it when done.
func Start(audience string) (*Issuer, error) {
	is := &Issuer{Audience: audience}
	var err error
	if is.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		return nil, fmt.Errorf("authtest: %w", err)
	}
	if is.other, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		return nil, fmt.Errorf("authtest: %w", err)
	}
	if is.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		return nil, fmt.Errorf("authtest: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": is.URL, "jwks_uri": is.URL + "/jwks.json",
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
		})
	})
	mux.HandleFunc("GET /jwks.json", func(w http.ResponseWriter, _ *http.Request) {
		is.KeyFetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
			{Key: &is.rsa.PublicKey, KeyID: "rsa-1", Algorithm: "RS256", Use: "sig"},
			{Key: &is.ec.PublicKey, KeyID: "ec-1", Algorithm: "ES256", Use: "sig"},
		}})
	})
	is.srv = httptest.NewServer(mux)
	is.URL = is.srv.URL
	return is, nil
}

// Close stops the server.
func (is *Issuer) Close() { is.srv.Close() }

// JWKSURL is where the issuer serves its keys.
func (is *Issuer) JWKSURL() string { return is.URL + "/jwks.json" }

// Claims returns the claims of a valid token for sub: this issuer, its
// audience, an hour to live.
func (is *Issuer) Claims(sub string) map[string]any {
	now := time.Now()
	return map[string]any{"iss": is.URL, "aud": is.Audience, "sub": sub, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

// Token returns a valid RS256 token for sub.
func (is *Issuer) Token(sub string) string { return is.Sign(is.Claims(sub)) }

// Sign signs claims with the issuer's RSA key (RS256, kid rsa-1).
func (is *Issuer) Sign(claims map[string]any) string {
	return sign(jose.RS256, is.rsa, "rsa-1", claims)
}

// SignES256 signs claims with the issuer's EC key (ES256, kid ec-1).
func (is *Issuer) SignES256(claims map[string]any) string {
	return sign(jose.ES256, is.ec, "ec-1", claims)
}

// SignWrongKey signs claims with a key the JWKS does not hold, under the
// kid of one it does: the signature does not verify.
func (is *Issuer) SignWrongKey(claims map[string]any) string {
	return sign(jose.RS256, is.other, "rsa-1", claims)
}

// Unsigned returns claims as an "alg": "none" token with an empty
// signature.
func Unsigned(claims map[string]any) string {
	enc := base64.RawURLEncoding.EncodeToString
	h, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT"})
	p, _ := json.Marshal(claims)
	return enc(h) + "." + enc(p) + "."
}

func sign(alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		panic(fmt.Sprintf("authtest: signer: %v", err)) // a test key always makes a signer
	}
	p, _ := json.Marshal(claims)
	obj, err := s.Sign(p)
	if err != nil {
		panic(fmt.Sprintf("authtest: sign: %v", err))
	}
	out, _ := obj.CompactSerialize()
	return out
}
