// Package claimsession is resource claims over a session's facts: what the
// runner does around its execution ledger (Calls, through the port Turn
// that package turn implements), what the session store does as it ends a
// blocked turn or deletes a session that holds grants (Store), the
// broker's Fate of a stale grant read from its holder's facts (Fate), and
// the claims as the operator API shows them (View, MaskFacts). It sits
// between package claims (the domain, which package reducer folds) and
// the packages that call it, so a change to how claims run touches it
// alone.
package claimsession
