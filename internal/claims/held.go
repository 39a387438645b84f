package claims

import (
	"errors"
	"slices"
)

// The claims a session holds, as its facts record them (package reducer
// folds the facts and embeds Held in its State): a grant is held from its
// claim.granted, quarantined by claim.quarantined, gone after
// claim.released; a blocked call's suspension names what blocks it
// (Block).

// GrantID is the id of the grant a tool call's executions run under: the
// same for every attempt of the call, so a rerun keeps its grant.
func GrantID(session, toolCallID string) string { return "gr_" + session + "_" + toolCallID }

// Block is what a blocked call waits for: the broker's outcome (blocked
// or over capacity), the grants in its way and the earlier waiters it may
// not pass.
type Block struct {
	ToolCallID string  `json:"toolCallId"`
	Tool       string  `json:"tool"`
	Claims     []Claim `json:"claims"`
	Outcome    Outcome `json:"outcome"`
	Blockers   []Grant `json:"blockers,omitempty"`
	Ahead      int     `json:"ahead,omitempty"`
}

// Held is the grants a session's calls hold. Embedded in a state, its
// JSON is that state's "grants" field, and Grant is the state's method;
// the folds of claim facts are a Folder's (Fold), not Held's, so a state
// that embeds it does not offer them.
type Held struct {
	// Grants are the resource claims the session's calls hold, quarantined
	// or not.
	Grants []Grant `json:"grants,omitempty"`
}

// ErrNotHeld is matched when a fact names a grant the session does not
// hold.
var ErrNotHeld = errors.New("claims: grant not held")

// notHeld is the error of a grant not held, by id.
type notHeld string

func (e notHeld) Error() string { return "grant " + string(e) + " is not held" }

// Is makes errors.Is(err, ErrNotHeld) true.
func (e notHeld) Is(target error) bool { return target == ErrNotHeld }

var errUnnamed = errors.New("grant not named")

// Grant returns the grant held by id.
func (h Held) Grant(id string) (Grant, bool) {
	for _, g := range h.Grants {
		if g.ID == id {
			return g, true
		}
	}
	return Grant{}, false
}

// Folder folds claim facts into the Held it was made on.
type Folder struct{ h *Held }

// Fold is the Folder of h.
func Fold(h *Held) Folder { return Folder{h: h} }

// Hold folds a granted call's grant: h holds g (again, out of quarantine,
// after a quarantine), with claims of its own. A grant that names no id,
// call or claim, or whose claims are not valid, is an error, and h is
// unchanged.
func (f Folder) Hold(g *Grant) error {
	h := f.h
	if g == nil || g.ID == "" || g.ToolCall == "" || len(g.Claims) == 0 {
		return errUnnamed
	}
	if err := CheckAll(g.Claims); err != nil {
		return err
	}
	held := *g
	held.Quarantined = false
	held.Claims = slices.Clone(g.Claims)
	if i := slices.IndexFunc(h.Grants, func(x Grant) bool { return x.ID == g.ID }); i >= 0 {
		h.Grants[i] = held
		return nil
	}
	h.Grants = append(h.Grants, held)
	return nil
}

// Find is the index of the held grant g names: an error when g names none,
// and one matching ErrNotHeld when it is not held.
func (f Folder) Find(g *Grant) (int, error) {
	h := f.h
	if g == nil || g.ID == "" {
		return 0, errUnnamed
	}
	i := slices.IndexFunc(h.Grants, func(x Grant) bool { return x.ID == g.ID })
	if i < 0 {
		return 0, notHeld(g.ID)
	}
	return i, nil
}

// Free drops the held grant at index i (see Find).
func (f Folder) Free(i int) { f.h.Grants = slices.Delete(f.h.Grants, i, i+1) }

// Quarantine marks the held grant at index i (see Find) quarantined.
func (f Folder) Quarantine(i int) { f.h.Grants[i].Quarantined = true }
