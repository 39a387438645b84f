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
	"slices"
	"sync"
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
	ec    *ecdsa.PrivateKey
	other *rsa.PrivateKey // signs tokens whose signature must not verify

	mu        sync.Mutex
	rsaKeys   map[string]*rsa.PrivateKey // every RSA key made, by kid, published or not
	published []string                   // the RSA kids in the JWKS, in order
	current   string                     // the kid Sign uses
	header    http.Header                // added to each JWKS response
	status    int                        // of each JWKS response; 0 is 200
	hold      *hold                      // a JWKS GET waits for its release
}

// Start starts an issuer whose tokens carry audience, with one RSA key
// (kid rsa-1) and one EC key (ec-1) in its JWKS. Close it when done.
func Start(audience string) (*Issuer, error) {
	is := &Issuer{Audience: audience, rsaKeys: map[string]*rsa.PrivateKey{}, header: http.Header{}}
	var err error
	if is.other, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		return nil, fmt.Errorf("authtest: %w", err)
	}
	if is.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		return nil, fmt.Errorf("authtest: %w", err)
	}
	if _, err := is.Rotate(); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": is.URL, "jwks_uri": is.URL + "/jwks.json",
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
		})
	})
	mux.HandleFunc("GET /jwks.json", is.serveKeys)
	is.srv = httptest.NewServer(mux)
	is.URL = is.srv.URL
	return is, nil
}

func (is *Issuer) serveKeys(w http.ResponseWriter, r *http.Request) {
	is.KeyFetches.Add(1)
	is.mu.Lock()
	hold := is.hold
	is.mu.Unlock()
	if hold != nil {
		hold.once.Do(func() { close(hold.arrived) })
		select {
		case <-hold.release:
		case <-r.Context().Done():
			return
		}
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	for k, vs := range is.header {
		w.Header()[k] = vs
	}
	if is.status != 0 && is.status != http.StatusOK {
		http.Error(w, "authtest: keys unavailable", is.status)
		return
	}
	set := jose.JSONWebKeySet{}
	for _, kid := range is.published {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: &is.rsaKeys[kid].PublicKey, KeyID: kid, Algorithm: "RS256", Use: "sig"})
	}
	set.Keys = append(set.Keys, jose.JSONWebKey{Key: &is.ec.PublicKey, KeyID: "ec-1", Algorithm: "ES256", Use: "sig"})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(set)
}

// Rotate makes a new RSA key (kid rsa-2, rsa-3, ...), publishes it in the
// JWKS beside the others and makes it the one Sign and Token use. The
// keys it replaces stay published until Revoke.
func (is *Issuer) Rotate() (string, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", fmt.Errorf("authtest: %w", err)
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	kid := fmt.Sprintf("rsa-%d", len(is.rsaKeys)+1)
	is.rsaKeys[kid], is.current = k, kid
	is.published = append(is.published, kid)
	return kid, nil
}

// Revoke removes the RSA key kid from the JWKS; SignWith still signs with
// it.
func (is *Issuer) Revoke(kid string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.published = slices.DeleteFunc(is.published, func(k string) bool { return k == kid })
}

// SetKeysHeader sets a header of the JWKS responses from now on, such as
// Cache-Control ("" removes it).
func (is *Issuer) SetKeysHeader(name, value string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	if value == "" {
		is.header.Del(name)
		return
	}
	is.header.Set(name, value)
}

// SetKeysStatus makes the JWKS answer status (0 or 200: the keys).
func (is *Issuer) SetKeysStatus(status int) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.status = status
}

// HoldKeys makes JWKS GETs wait (counted when they arrive) until release
// is called; arrived closes when the first one is waiting.
func (is *Issuer) HoldKeys() (arrived <-chan struct{}, release func()) {
	is.mu.Lock()
	defer is.mu.Unlock()
	h := &hold{release: make(chan struct{}), arrived: make(chan struct{})}
	is.hold = h
	var once sync.Once
	return h.arrived, func() {
		once.Do(func() {
			is.mu.Lock()
			is.hold = nil
			is.mu.Unlock()
			close(h.release)
		})
	}
}

// hold is a HoldKeys in force.
type hold struct {
	release, arrived chan struct{}
	once             sync.Once
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

// Sign signs claims with the issuer's current RSA key (RS256; kid rsa-1
// until Rotate).
func (is *Issuer) Sign(claims map[string]any) string {
	is.mu.Lock()
	kid := is.current
	is.mu.Unlock()
	return is.SignWith(kid, claims)
}

// SignWith signs claims with the RSA key kid, published or revoked (RS256).
func (is *Issuer) SignWith(kid string, claims map[string]any) string {
	return is.SignUnder("", kid, claims)
}

// SignUnder signs claims with the RSA key kid (RS256) under the header
// kid as ("" is kid itself).
func (is *Issuer) SignUnder(as, kid string, claims map[string]any) string {
	is.mu.Lock()
	k := is.rsaKeys[kid]
	is.mu.Unlock()
	if k == nil {
		panic(fmt.Sprintf("authtest: no key %q", kid)) // a test names a key it made
	}
	if as == "" {
		as = kid
	}
	return sign(jose.RS256, k, as, claims)
}

// SignES256 signs claims with the issuer's EC key (ES256, kid ec-1).
func (is *Issuer) SignES256(claims map[string]any) string {
	return sign(jose.ES256, is.ec, "ec-1", claims)
}

// SignWrongKey signs claims with a key the JWKS does not hold, under the
// kid of one it does (rsa-1): the signature does not verify.
func (is *Issuer) SignWrongKey(claims map[string]any) string {
	return sign(jose.RS256, is.other, "rsa-1", claims)
}

// SignOtherKey signs claims with a key the JWKS never holds, under kid:
// one the JWKS holds (a bad signature for a known key), one it does not
// (an unknown key), or none when kid is "".
func (is *Issuer) SignOtherKey(kid string, claims map[string]any) string {
	return sign(jose.RS256, is.other, kid, claims)
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
