package claims

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Access says whether a claim reads or writes its resource.
type Access string

// Accesses.
const (
	Read  Access = "read"
	Write Access = "write"
)

// MaxKey bounds a claim key's length in bytes.
const MaxKey = 1024

// MaxNamespace bounds a claim's namespace, and its instance, in bytes: the
// two name the claims space's DynamoDB item, whose partition key
// ("claims#<namespace>#<instance>") must stay under DynamoDB's 2,048 bytes
// with room to spare.
const MaxNamespace = 256

// Claim names an outside resource a tool call needs: a key in a namespace
// (such as "orders" or "git-ref") on one instance of it (a database, a
// repository; "" for the namespace's only one), read or written. Weight is
// what the claim counts against its namespace's capacity (0 counts as 1).
//
// Claims are per owner by default: a claim is held in the claim space of
// its session's owner (Request.Owner), so one tenant's grants never block
// another tenant's calls. Shared claims opt into the one space every owner
// shares, for a resource tenants really share, where blocking each other is
// the point (a shared claim never conflicts with an unshared one); there a
// blocker of another owner is shown opaque (see Masked).
type Claim struct {
	Namespace string `json:"namespace"`
	Instance  string `json:"instance,omitempty"`
	Key       string `json:"key"`
	Access    Access `json:"access"`
	Weight    int    `json:"weight,omitempty"`
	Shared    bool   `json:"shared,omitempty"`
}

func (c Claim) String() string {
	in := ""
	if c.Instance != "" {
		in = "@" + c.Instance
	}
	if c.Shared {
		return fmt.Sprintf("%s%s:%s (%s, shared)", c.Namespace, in, c.Key, c.Access)
	}
	return fmt.Sprintf("%s%s:%s (%s)", c.Namespace, in, c.Key, c.Access)
}

// weight is what c counts against its namespace's capacity.
func (c Claim) weight() int { return max(c.Weight, 1) }

// ErrInvalid is matched (errors.Is) by every *KeyError and *ClaimError.
var ErrInvalid = errors.New("claims: invalid claim")

// KeyError refuses a key that is not canonical. The broker never
// normalises a key: if it turned `a/../b` into `b`, one session could hold
// one spelling and another the other, each believing they are disjoint.
type KeyError struct {
	Key    string
	Reason string
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("claims: key %q is not canonical: %s", e.Key, e.Reason)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *KeyError) Is(target error) bool { return target == ErrInvalid }

// CheckKey checks that key is canonical: non-empty, at most MaxKey bytes
// of UTF-8 with no control character (NUL, newline, tab, DEL...),
// relative, with no empty, "." or ".." segment (so no leading, trailing or
// doubled "/").
func CheckKey(key string) error {
	switch {
	case key == "":
		return &KeyError{Key: key, Reason: "empty"}
	case len(key) > MaxKey:
		return &KeyError{Key: key[:32] + "…", Reason: fmt.Sprintf("longer than %d bytes", MaxKey)}
	case !utf8.ValidString(key):
		return &KeyError{Key: key, Reason: "not valid UTF-8"}
	case strings.ContainsFunc(key, unicode.IsControl):
		return &KeyError{Key: key, Reason: "holds a control character"}
	case strings.HasPrefix(key, "/"):
		return &KeyError{Key: key, Reason: "absolute (leading /)"}
	case strings.HasSuffix(key, "/"):
		return &KeyError{Key: key, Reason: "trailing /"}
	}
	for _, seg := range strings.Split(key, "/") {
		switch seg {
		case "":
			return &KeyError{Key: key, Reason: "empty segment (//)"}
		case ".", "..":
			return &KeyError{Key: key, Reason: fmt.Sprintf("%q segment", seg)}
		}
	}
	return nil
}

// ClaimError refuses a claim whose namespace, instance or access is wrong.
type ClaimError struct {
	Claim  Claim
	Reason string
}

func (e *ClaimError) Error() string {
	c := e.Claim.String()
	if len(c) > 200 {
		c = c[:200] + "…"
	}
	return fmt.Sprintf("claims: claim %q: %s", c, e.Reason)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *ClaimError) Is(target error) bool { return target == ErrInvalid }

// Check checks a claim: a non-empty namespace and an instance, each at
// most MaxNamespace bytes of UTF-8 with no "#" (the broker's separator) and
// no control character, read or write access, a weight not below zero, and
// a canonical key.
func (c Claim) Check() error {
	if c.Namespace == "" {
		return &ClaimError{Claim: c, Reason: "namespace must be non-empty"}
	}
	if reason := checkName(c.Namespace); reason != "" {
		return &ClaimError{Claim: c, Reason: "namespace " + reason}
	}
	if reason := checkName(c.Instance); reason != "" {
		return &ClaimError{Claim: c, Reason: "instance " + reason}
	}
	switch {
	case c.Access != Read && c.Access != Write:
		return &ClaimError{Claim: c, Reason: fmt.Sprintf("access %q: want read or write", c.Access)}
	case c.Weight < 0:
		return &ClaimError{Claim: c, Reason: "negative weight"}
	}
	return CheckKey(c.Key)
}

// checkName says what is wrong with a namespace or an instance, or "".
func checkName(s string) string {
	switch {
	case len(s) > MaxNamespace:
		return fmt.Sprintf("is %d bytes, longer than the %d allowed", len(s), MaxNamespace)
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case strings.Contains(s, "#"):
		return "must not contain #"
	case strings.ContainsFunc(s, unicode.IsControl):
		return "holds a control character (NUL, newline...)"
	}
	return ""
}

// CheckAll checks every claim.
func CheckAll(cs []Claim) error {
	for _, c := range cs {
		if err := c.Check(); err != nil {
			return err
		}
	}
	return nil
}

// Overlap reports whether a and b name overlapping resources: the same
// namespace and instance, both shared or neither, and one key equal to the
// other or a path prefix of it by whole segments ("a/b" covers "a/b/c",
// never "a/bc"). Unshared claims overlap only within one owner's space: the
// broker compares only claims of one space (see SpaceKey).
func Overlap(a, b Claim) bool {
	if a.Namespace != b.Namespace || a.Instance != b.Instance || a.Shared != b.Shared {
		return false
	}
	return a.Key == b.Key || strings.HasPrefix(a.Key, b.Key+"/") || strings.HasPrefix(b.Key, a.Key+"/")
}

// Conflict reports whether a and b cannot be held at once: they overlap
// and at least one writes.
func Conflict(a, b Claim) bool {
	return Overlap(a, b) && (a.Access == Write || b.Access == Write)
}

// ConflictAny reports whether any claim of as conflicts with any of bs.
func ConflictAny(as, bs []Claim) bool {
	for _, a := range as {
		for _, b := range bs {
			if Conflict(a, b) {
				return true
			}
		}
	}
	return false
}

// Func computes the claims a call with this input needs. The runner calls
// it only with input the tool's schema accepted.
type Func func(input json.RawMessage) ([]Claim, error)

// Static is a claim declared with its tool: a namespace and instance, the
// input field (a top-level string property) whose value is the key, and the
// access. It is the form an agent file declares. Shared puts the claim in
// the space every owner shares (see Claim); by default it is the owner's.
type Static struct {
	Namespace string `json:"namespace"`
	Instance  string `json:"instance,omitempty"`
	Field     string `json:"field"`
	Access    Access `json:"access"`
	Weight    int    `json:"weight,omitempty"`
	Shared    bool   `json:"shared,omitempty"`
}

// Of turns static declarations into a Func. Each names a top-level input
// field whose value must be a string: the claim's key, checked as is.
func Of(decls ...Static) Func {
	return func(input json.RawMessage) ([]Claim, error) {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(input, &fields); err != nil {
			return nil, fmt.Errorf("claims: input is not an object: %w", err)
		}
		out := make([]Claim, 0, len(decls))
		for _, d := range decls {
			var key string
			raw, ok := fields[d.Field]
			if !ok {
				return nil, fmt.Errorf("claims: input has no field %q for the %s claim", d.Field, d.Namespace)
			}
			if err := json.Unmarshal(raw, &key); err != nil {
				return nil, fmt.Errorf("claims: input field %q is not a string: %w", d.Field, err)
			}
			c := Claim{Namespace: d.Namespace, Instance: d.Instance, Key: key, Access: d.Access, Weight: d.Weight, Shared: d.Shared}
			if err := c.Check(); err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, nil
	}
}

// Typed turns a function on a tool's Go input type into a Func: the input
// is decoded into T first.
func Typed[T any](f func(T) ([]Claim, error)) Func {
	return func(input json.RawMessage) ([]Claim, error) {
		var in T
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, fmt.Errorf("claims: decode input: %w", err)
		}
		cs, err := f(in)
		if err != nil {
			return nil, err
		}
		return cs, CheckAll(cs)
	}
}

// CheckStatic checks declarations as a tool is built: a namespace, a
// field and an access each.
func CheckStatic(decls []Static) error {
	for _, d := range decls {
		c := Claim{Namespace: d.Namespace, Instance: d.Instance, Key: "k", Access: d.Access, Weight: d.Weight}
		if err := c.Check(); err != nil {
			return err
		}
		if d.Field == "" {
			return fmt.Errorf("claims: the %s claim names no input field", d.Namespace)
		}
	}
	return nil
}

// CheckDeclared checks the claims declared with a tool, as an agent file
// declares them: only a side effect (sideEffect: a write or external tool)
// claims resources, and each declaration is well formed (CheckStatic).
func CheckDeclared(sideEffect bool, decls []Static) error {
	if len(decls) == 0 {
		return nil
	}
	if !sideEffect {
		return errors.New("only a write or external tool claims resources")
	}
	return CheckStatic(decls)
}
