package lifecycle

import (
	"context"
	"time"

	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

// This file holds what the end of a session's life runs on: the fact
// log's tombstones (Log), the stream store's objects (Objects), and the
// session store's hooks (Sessions).

// Log is what the end of a session's life needs of a session's fact log:
// its head and facts, and its tombstone — bury a session, purge its items
// (deferred while a fence stands), mark it purged — and the sweep's scan
// of the table. *dynamo.Store implements it on DynamoDB (its tombstone
// items share the table and the create's transaction, which checks that
// an id is free: see dynamo.ErrDeleting), and internal/memstore's Log in
// memory; internal/factlogtest's contract holds both to it.
type Log interface {
	Head(ctx context.Context, session string) (dynamo.Head, error)
	Facts(ctx context.Context, session string, after int64) ([]reducer.Fact, error)

	Tombstone(ctx context.Context, session string) (dynamo.Tombstone, error)
	Bury(ctx context.Context, h dynamo.Head, by string, at time.Time) error
	Purge(ctx context.Context, session string) (int, error)
	DeferPurge(ctx context.Context, session string, until time.Time, streams []string) error
	MarkPurged(ctx context.Context, session string, at time.Time) error
	Sweep(ctx context.Context, before time.Time, expired func(dynamo.Head) error, unpurged func(dynamo.Tombstone) error) error
}

// Objects is what it needs of the stream store: list a session's objects,
// delete one, and list every snapshot and every file. *streams.Store implements it; which
// objects go is decided here (deleteObjects).
type Objects interface {
	SessionObjects(ctx context.Context, session string) ([]streams.Object, error)
	DeleteObject(ctx context.Context, key string) error
	Snapshots(ctx context.Context, fn func(streams.SnapshotObject) error) error
	// Files lists every file (internal/files: files/<session>/<sha256>).
	Files(ctx context.Context, fn func(streams.SnapshotObject) error) error
}

// Sessions is what it needs of the session store over those stores: its
// clock, a session's state, and the hooks into child sessions and resource
// claims that a delete runs before it buries or purges. Package session's
// Store provides it (internal/session/lifecycle.go).
type Sessions interface {
	// Now is the store's current time, in UTC.
	Now() time.Time
	// State is session id's state, loaded.
	State(ctx context.Context, id string) (reducer.State, error)
	// Cascade cancels the children that session id's ended turn left
	// running.
	Cascade(ctx context.Context, id string) error
	// Report reports the end of child session id's turn to its parent.
	Report(ctx context.Context, id string) error
	// TellParent commits f, a child's end, to session parent and wakes it;
	// a parent whose turn no longer waits for the child, or that is gone,
	// needs nothing (no error).
	TellParent(ctx context.Context, parent string, f reducer.Fact) error
	// OrphanGrants orphans, in the claims broker, every grant session id's
	// facts hold, before a purge deletes them.
	OrphanGrants(ctx context.Context, id string) error
}

// Lifecycle is the end of sessions' lives on a fact log, a stream store
// and a session store's hooks: Delete, FinishDelete and Sweep.
type Lifecycle struct {
	facts    Log
	objects  Objects
	sessions Sessions
}

// New is the end of sessions' lives on facts, objects and sessions.
func New(facts Log, objects Objects, sessions Sessions) *Lifecycle {
	return &Lifecycle{facts: facts, objects: objects, sessions: sessions}
}
