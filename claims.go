package baton

import (
	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/tool"
)

// Claim is a resource a tool call needs: a key in a namespace (on one
// instance of it), read or written (Access), with a weight against the
// namespace's capacity; see ClaimDecl for the fields. Two claims conflict
// when their keys overlap and either writes.
type Claim = claims.Claim

// Access is how a claim uses its resource: AccessRead or AccessWrite.
type Access = claims.Access

// The accesses of a claim. Reads of one key share it; a write excludes
// every other claim of an overlapping key.
const (
	AccessRead  Access = claims.Read
	AccessWrite Access = claims.Write
)

// ClaimDecl declares a claim keyed by a top-level string field of a tool's
// input, as an agent file's tool declares it.
type ClaimDecl struct {
	// Namespace names the kind of resource ("orders", "git-ref");
	// required, at most 256 bytes.
	Namespace string
	// Instance names one instance of the namespace (a database, a
	// repository); empty for the namespace's only one.
	Instance string
	// Field is the input field whose string value is the claim's key, a
	// canonical slash-separated path (a claim of "a" covers "a/b").
	Field string
	// Access is AccessRead or AccessWrite.
	Access Access
	// Weight is what the claim counts against its namespace's capacity;
	// zero counts as one.
	Weight int
	// Shared puts the claim in the claim space every owner shares, for a
	// resource tenants really share; by default a claim is held in its
	// session's owner's space, so one tenant never blocks another.
	Shared bool
}

// static is d as the claims package declares it.
func (d ClaimDecl) static() claims.Static { return claims.Static(d) }

// Claims declares the resource claims of a side-effecting tool's calls,
// each keyed by an input field: a call waits (its turn suspended as
// blocked) while another session's grant conflicts with it, and holds its
// claims until its result is recorded, or, if it became uncertain, until
// an operator's verdict. A key that is not canonical (`a/../b`, `a//b`, a
// trailing `/`) is the call's error, and nothing is claimed. A claim on a
// field that is not a string property of the tool's input schema is
// refused when an agent that has the tool is checked.
func Claims(decls ...ClaimDecl) ToolOption {
	return func(t *Tool) {
		static := make([]claims.Static, len(decls))
		for i, d := range decls {
			static[i] = d.static()
		}
		if err := claims.CheckStatic(static); err != nil {
			t.Err = err
			return
		}
		tool.Claim(t, static...)
	}
}

// ClaimsOf computes a call's resource claims from its typed input (the
// tool's Func input type In), as Claims declares them statically.
func ClaimsOf[In any](f func(In) ([]Claim, error)) ToolOption {
	return func(t *Tool) { t.Claims = claims.Typed(f) }
}
