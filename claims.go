package baton

import (
	"github.com/baton-run/baton/internal/claims"
)

// Claim is a resource a tool call needs (a namespace, an instance, a
// canonical key, read or write); see package claims.
type Claim = claims.Claim

// ClaimDecl declares a claim keyed by a top-level string field of a tool's
// input, as an agent file's tool declares it.
type ClaimDecl = claims.Static

// Claims declares the resource claims of a side-effecting tool's calls,
// each keyed by an input field: a call waits (its turn suspended as
// blocked) while another session's grant conflicts with it, and holds its
// claims until its result is recorded, or, if it became uncertain, until
// an operator's verdict. A key that is not canonical (`a/../b`, `a//b`, a
// trailing `/`) is the call's error, and nothing is claimed.
func Claims(decls ...ClaimDecl) ToolOption {
	return func(t *Tool) {
		if err := claims.CheckStatic(decls); err != nil {
			t.Err = err
			return
		}
		t.Claims = claims.Of(decls...)
	}
}

// ClaimsOf computes a call's resource claims from its typed input (the
// tool's Func input type In), as Claims declares them statically.
func ClaimsOf[In any](f func(In) ([]Claim, error)) ToolOption {
	return func(t *Tool) { t.Claims = claims.Typed(f) }
}
