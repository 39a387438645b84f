package operator

import (
	"context"
	"net/http"
)

// identityKey is the context key of the caller's identity.
type identityKey struct{}

// WithIdentity returns ctx carrying the caller's identity sub (an OIDC
// subject, for instance). An empty sub carries no identity.
func WithIdentity(ctx context.Context, sub string) context.Context {
	return context.WithValue(ctx, identityKey{}, sub)
}

// IdentityFromContext returns the identity put into ctx by WithIdentity;
// ok is false when there is none.
func IdentityFromContext(ctx context.Context) (string, bool) {
	sub, ok := ctx.Value(identityKey{}).(string)
	return sub, ok && sub != ""
}

// ContextIdentity is a Config.Identity that reads the identity from the
// request's context, where a front end such as internal/lambdahttp put it with
// WithIdentity. It is the default when Config.Identity is nil.
func ContextIdentity(r *http.Request) (string, bool) {
	return IdentityFromContext(r.Context())
}
