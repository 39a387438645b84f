package session

// This file holds Decorate, the seam for store calls: it wraps either of
// the store's stores.

// Decorate returns a store like s, with the same Config,
// whose fact log is facts(s's fact log) and whose stream store is
// streams(s's stream store); a nil function keeps that store as it is.
// It is the seam for store calls: a decorator sees every call the session
// layer, and so everything above it, makes to storage (tracing, metrics,
// injected faults), without an edit anywhere else. The copy queues its own
// posts (see lanes); decorate once, when wiring, not per request.
func (s *Store) Decorate(facts func(FactLog) FactLog, streams func(StreamStore) StreamStore) *Store {
	d := s.stores
	if facts != nil {
		d.facts = facts(d.facts)
	}
	if streams != nil {
		d.streams = streams(d.streams)
	}
	return build(&core{Config: s.Config, stores: d})
}
