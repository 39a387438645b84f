// Package children is the sub-agents feature outside the reducer: a turn's
// tool call starts a child session, waits for its report, and the
// children its ended turns left running are cancelled (a delete's walk of
// the family is the session store's lifecycle). This package holds the
// child sessions in the session store (Store, which package session embeds
// over a small port of its core, Core): creating a child once
// (CreateChild), delivering its end to the parent once (Report), showing
// its approval requests up to the root (ShowApprovals, ShowPending; an
// answer given to an ancestor is routed down, AnswerChild), and cancelling
// orphans (Cascade, CascadeFrom); and what the operator API's session view
// lists of them (Pending).
//
// The runner's side (linking sub-agent tools, admitting and spawning
// children, hand-offs, reports, and an orphaned child's check of its
// parent) is internal/children/spawn, which pkg/turn calls through a port;
// the facts and their fold rules are pkg/reducer's (children.go), and the
// authoring declarations root baton's.
package children
