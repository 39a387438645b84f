package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Rule is an approval rule, the one kind every tool uses (Go tools, an
// agent file's declared tools, MCP tools): "never", "always", or
// conditions on the call's input, any of which asks for approval.
//
// Rules fail closed. A condition asks unless it can read its field and
// prove the call is outside it: the input must be one JSON object holding
// the field exactly once, under exactly its name (a key that differs only
// in case, or a duplicated key, asks), with a value of the type the
// condition reads (a number for Over, a string for PathPrefix; null, an
// array, an object or another type asks). The runner validates a call's
// input against the tool's schema before any rule runs, so a rule only
// ever judges input the schema accepted.
type Rule struct {
	Always bool
	Never  bool
	// PathPrefix asks when the string field Field lies at or under Prefix.
	PathPrefix *PrefixRule `json:"pathPrefix,omitempty"`
	// Over asks when the number field Field is greater than Limit.
	Over *OverRule `json:"over,omitempty"`
	// When is a predicate on the whole input, for rules made in Go (the
	// agent file has no form of it): it asks when it returns true, and
	// also when it returns an error or panics.
	When func(input json.RawMessage) (bool, error) `json:"-"`
}

// PrefixRule matches a string field by path prefix.
type PrefixRule struct {
	Field  string `json:"field"`
	Prefix string `json:"prefix"`
}

// OverRule matches a number field above a limit.
type OverRule struct {
	Field string  `json:"field"`
	Limit float64 `json:"limit"`
}

// UnmarshalJSON accepts "never", "always" or an object with pathPrefix,
// over or both, and refuses a rule that Validate refuses.
func (r *Rule) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		switch s {
		case "never":
			*r = Rule{Never: true}
		case "always":
			*r = Rule{Always: true}
		default:
			return fmt.Errorf("approval rule %q: want never, always or an object", s)
		}
		return nil
	}
	type plain Rule
	var p plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return err
	}
	if p.Always || p.Never {
		return errors.New(`approval rule object: write "always" or "never" as a string`)
	}
	*r = Rule(p)
	return r.Validate()
}

// MarshalJSON writes the rule as UnmarshalJSON reads it, so it round-trips.
// A rule with a When predicate has no JSON form: it is an error.
func (r Rule) MarshalJSON() ([]byte, error) {
	switch {
	case r.When != nil:
		return nil, errors.New("approval rule: a When predicate has no JSON form")
	case r.Always && !r.Never && r.PathPrefix == nil && r.Over == nil:
		return []byte(`"always"`), nil
	case r.Never && !r.Always && r.PathPrefix == nil && r.Over == nil:
		return []byte(`"never"`), nil
	}
	type plain Rule
	return json.Marshal(plain(r))
}

// Validate refuses a rule that could not decide: one with no condition (a
// field condition or a When predicate), with both Always and Never or
// either with a condition, a condition on no field, a path prefix that is empty, or a limit that is not finite.
func (r Rule) Validate() error {
	switch {
	case r.Always && r.Never:
		return errors.New("approval rule is both always and never")
	case (r.Always || r.Never) && (r.PathPrefix != nil || r.Over != nil || r.When != nil):
		return errors.New("approval rule always or never takes no pathPrefix or over (nor a predicate)")
	case r.Always || r.Never:
		return nil
	case r.PathPrefix == nil && r.Over == nil && r.When == nil:
		return errors.New("approval rule object needs pathPrefix or over")
	}
	// A rule on no field would never ask: refuse it rather than fail open.
	if p := r.PathPrefix; p != nil {
		if p.Field == "" {
			return errors.New("approval rule pathPrefix needs a field")
		}
		if p.Prefix == "" {
			return errors.New("approval rule pathPrefix needs a prefix")
		}
	}
	if o := r.Over; o != nil {
		if o.Field == "" {
			return errors.New("approval rule over needs a field")
		}
		if math.IsNaN(o.Limit) || math.IsInf(o.Limit, 0) {
			return fmt.Errorf("approval rule over: limit %v is not a finite number", o.Limit)
		}
	}
	return nil
}

// Needs reports whether a call with input needs approval under the rule.
// A rule Validate refuses asks for every call.
func (r Rule) Needs(input json.RawMessage) bool {
	if r.Validate() != nil {
		return true
	}
	switch {
	case r.Always:
		return true
	case r.Never:
		return false
	}
	if p := r.PathPrefix; p != nil {
		v, ok := field(input, p.Field)
		if !ok || !outsidePrefix(v, p.Prefix) {
			return true
		}
	}
	if o := r.Over; o != nil {
		v, ok := field(input, o.Field)
		if !ok || !notOver(v, o.Limit) {
			return true
		}
	}
	return r.When != nil && asks(r.When, input)
}

// asks runs a predicate rule, failing closed: an error or a panic asks.
func asks(when func(json.RawMessage) (bool, error), input json.RawMessage) (ask bool) {
	defer func() {
		if recover() != nil {
			ask = true
		}
	}()
	ok, err := when(input)
	return ok || err != nil
}

// AnyRule is the approval policy of rules: a call needs approval when any
// of them asks. With no rules every call asks.
func AnyRule(rules ...Rule) func(json.RawMessage) bool {
	rules = append([]Rule(nil), rules...)
	return func(input json.RawMessage) bool {
		if len(rules) == 0 {
			return true
		}
		for _, r := range rules {
			if r.Needs(input) {
				return true
			}
		}
		return false
	}
}

// field returns the value of the input object's key name. It is found
// only when the input is a single JSON object in which exactly one key
// equals name ignoring case, and that key is name itself: a key that a
// case-folding decoder (Go's encoding/json among them) would also take for
// name, or a duplicate that another decoder would pick instead, makes the
// field unreadable.
func field(input json.RawMessage, name string) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var val json.RawMessage
	found := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		if strings.EqualFold(key, name) {
			if key != name {
				return nil, false
			}
			found++
			val = v
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false // trailing data
	}
	return val, found == 1
}

// notOver reports whether v is a JSON number provably not greater than
// limit. It compares exactly: a decimal that rounds to the limit as a
// float64 but lies above it is over.
func notOver(v json.RawMessage, limit float64) bool {
	s := string(bytes.TrimSpace(v))
	if s == "" || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return false // a string, null, boolean, array or object
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return false
	}
	// Rounding to float64 keeps order: f < limit means s < limit.
	switch {
	case f < limit:
		return true
	case f > limit:
		return false
	}
	// s rounds to the limit: compare the decimal itself, unless its
	// exponent is too large to expand cheaply.
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp, err := strconv.Atoi(s[i+1:])
		if err != nil || exp > 1000 || exp < -1000 {
			return false
		}
	}
	x, ok := new(big.Rat).SetString(s)
	if !ok {
		return false
	}
	return x.Cmp(new(big.Rat).SetFloat64(limit)) <= 0
}

// outsidePrefix reports whether v is a JSON string naming a path provably
// outside prefix. Paths compare by whole elements ("/etc" covers
// "/etc/x", not "/etcetera") and ignoring case (a file system may). A path
// it cannot resolve on its own is not provably outside: one with a ".."
// element (a symbolic link may lead anywhere), a relative path against an
// absolute prefix or the reverse, a backslash, a percent sign (a server
// may unescape it), a control character or invalid UTF-8.
func outsidePrefix(v json.RawMessage, prefix string) bool {
	var s string
	if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
		return false // not a string
	}
	if !utf8.ValidString(s) || strings.ContainsAny(s, "\\%") || strings.ContainsFunc(s, unicode.IsControl) {
		return false
	}
	if path.IsAbs(s) != path.IsAbs(prefix) {
		return false
	}
	for _, el := range strings.Split(s, "/") {
		if el == ".." {
			return false
		}
	}
	c, pre := path.Clean(s), path.Clean(prefix)
	if pre == "/" || pre == "." {
		return false // covers every path of its kind
	}
	return !underFold(c, pre)
}

// underFold reports whether clean path c is pre or lies under it, element
// by element, ignoring case (by Unicode folding, so elements whose folded
// forms differ in length still compare).
func underFold(c, pre string) bool {
	ce, pe := strings.Split(c, "/"), strings.Split(pre, "/")
	if len(ce) < len(pe) {
		return false
	}
	for i, el := range pe {
		if !strings.EqualFold(ce[i], el) {
			return false
		}
	}
	return true
}
