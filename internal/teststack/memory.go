package teststack

import (
	"github.com/baton-run/baton/internal/clock"
	"github.com/baton-run/baton/internal/memstore"
	"github.com/baton-run/baton/internal/memtable"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/streams"
)

// Memory is one test's storage in memory, shared by the session stores
// built on it (each one a new "invocation"): a fact log, a bucket of turn
// streams, a wake queue, a table for the claims broker (claimsdb.New
// on Items, a memtable), and the clock they all read, which the test moves past a
// lease or an expiry instead of waiting for it.
type Memory struct {
	Clock  *clock.Shifted
	Log    *memstore.Log
	Bucket *memstore.Bucket
	Wakes  *memstore.Wakes
	Items  *memtable.Items
}

// NewMemory is empty storage on a clock reading the wall clock's time.
func NewMemory() *Memory {
	clk := &clock.Shifted{}
	return &Memory{Clock: clk, Log: memstore.NewLog(clk.Clock()), Bucket: memstore.NewBucket(clk.Clock()), Wakes: memstore.NewWakes(clk.Clock()), Items: memtable.New()}
}

// Sessions is a new session store on m, its wakes on m's queue and its
// time from m's clock.
func (m *Memory) Sessions() *session.Store {
	ss := session.New(m.Log, streams.New(m.Bucket, "memory"))
	ss.Waker = m.Wakes
	ss.Now = m.Clock.Clock()
	return ss
}
