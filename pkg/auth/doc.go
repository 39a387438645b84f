// Package auth verifies the callers' bearer JWTs in the function itself,
// for a front door that has no JWT authorizer (a Lambda Function URL, a REST
// API). A token is accepted only if its signature verifies against a key of
// the issuer's JWKS (fetched once and cached, refetched when a token names an
// unknown key), with an allowed asymmetric algorithm (never "none", never
// HMAC), the configured issuer, the configured audience (in aud, or in
// client_id when the token has no aud, as Cognito access tokens and API
// Gateway's JWT authorizer do), an expiry in the future and a subject. The
// subject is the caller's identity.
package auth
