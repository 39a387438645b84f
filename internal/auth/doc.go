// Package auth verifies the callers' bearer JWTs in the function itself,
// for a front door that has no JWT authorizer (a Lambda Function URL, a REST
// API). A token is accepted only if its signature verifies against a key of
// the issuer's JWKS, with an allowed asymmetric algorithm (never "none",
// never HMAC), the configured issuer, the configured audience (in aud, or in
// client_id when the token has no aud, as Cognito access tokens and API
// Gateway's JWT authorizer do), an expiry in the future and a subject. The
// subject is the caller's identity.
//
// Signatures are checked by go-oidc against this package's own key set
// (keys.go), which bounds how long keys are trusted and how often the
// issuer is asked:
//   - Fetched keys are trusted for the JWKS response's Cache-Control
//     max-age less its Age header, at most MaxKeyAge (5 min) and at least
//     MinKeyAge (1 s; no-store, no-cache and max-age=0 count as 0), or
//     DefaultKeyAge (5 min) when it has no max-age. Past that age no token
//     is verified until a fetch succeeds: a key the issuer removed is
//     refused at most that age after its removal, in every warm container.
//     If the JWKS cannot be fetched then, tokens are refused (401) and the
//     fetch is retried at most once per MinKeyAge.
//   - A token whose kid is not among the cached keys refetches the JWKS only
//     if no fetch started in the last UnknownKeyRefetch (30 s), in all, not
//     per kid, so random kids cannot multiply the fetches. A token whose kid
//     is cached, or that names none (every key is tried), never causes a
//     fetch, whatever its signature. So a container fetches the JWKS at most
//     once per key age plus once per 30 s, however many bad tokens come.
//   - A key the issuer publishes (a legitimate rotation) is accepted in
//     every token sent at least the shorter of UnknownKeyRefetch and the
//     keys' age after its publication; sooner when no fetch came lately.
//   - Fetches are single-flight: concurrent tokens that need one share it.
//
// The ages run on Config.Now, so tests move the clock instead of sleeping.
// A failed discovery (no Config.JWKSURL) is retried at most once per
// MinKeyAge.
package auth
