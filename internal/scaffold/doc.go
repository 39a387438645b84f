// Package scaffold writes a new baton project, one that imports baton as a
// module (baton init): go.mod, functions/{operator,resume,tick}, cmd/dev,
// an agent with one Go tool and its batontest tests (one replays a golden
// session, testdata/session.json, against the agent), a README, and its own
// template.yaml and Makefile derived from baton's (Template, Makefile), so
// that a project can regenerate or diff them when baton's change
// (baton template).
package scaffold
