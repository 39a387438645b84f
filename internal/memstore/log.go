package memstore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/baton-run/baton/internal/clock"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/pkg/reducer"
)

// Log is a fact log in memory with the semantics of dynamo.Store (see
// session.FactLog): appends are compare-and-sets on the session's last
// seq, whole or not at all, failing with dynamo.ErrConflict when another
// writer took the seq, with dynamo.ErrReceiptTaken when their receipt's
// key holds an unexpired receipt, and with dynamo.ErrDeleting when an
// earlier session of the id is still being deleted. Facts are stored
// encoded, as DynamoDB stores them, so a reader never shares a writer's
// values. The clock decides when a receipt expires. It is safe for
// concurrent use.
type Log struct {
	now clock.Clock

	mu       sync.Mutex
	facts    map[string][]stored // by session; facts[i] has seq i+1
	heads    map[string]dynamo.Head
	receipts map[string]dynamo.Receipt
	tombs    map[string]tomb
}

// stored is one fact item: the fact encoded, and the key of the receipt
// written with it.
type stored struct {
	body    []byte
	receipt string
}

// tomb is a tombstone and, while its purge is deferred, when it is due.
type tomb struct {
	dynamo.Tombstone
	due time.Time
}

// NewLog is an empty fact log on the clock now (nil is the wall clock).
func NewLog(now clock.Clock) *Log {
	return &Log{now: now, facts: map[string][]stored{}, heads: map[string]dynamo.Head{},
		receipts: map[string]dynamo.Receipt{}, tombs: map[string]tomb{}}
}

// Append is AppendWithReceipt without a receipt.
func (l *Log) Append(ctx context.Context, session string, next reducer.State, facts ...reducer.Fact) error {
	return l.AppendWithReceipt(ctx, session, next, nil, facts...)
}

// AppendWithReceipt writes facts, which must carry consecutive seqs, and
// the head derived from next, and rc when it is not nil, provided the
// session's last seq is facts[0].Seq-1 (or it has no head and no facts
// when facts[0].Seq is 1).
func (l *Log) AppendWithReceipt(ctx context.Context, session string, next reducer.State, rc *dynamo.Receipt, facts ...reducer.Fact) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: append to %q: %w", session, err)
	}
	if err := dynamo.CheckAppend(session, next, rc, facts); err != nil {
		return fmt.Errorf("memstore: append to %q: %w", session, err)
	}
	items := make([]stored, len(facts))
	for i, f := range facts {
		body, err := json.Marshal(f)
		if err != nil {
			return fmt.Errorf("memstore: append facts to %s: encode fact %d: %w", session, f.Seq, err)
		}
		items[i] = stored{body: body}
		if rc != nil {
			items[i].receipt = rc.Key
		}
	}
	first, last := facts[0].Seq, facts[len(facts)-1].Seq
	now := l.now.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	head, hasHead := l.heads[session]
	have := int64(len(l.facts[session]))
	if t, ok := l.tombs[session]; first == 1 && ok && !t.Purged {
		return fmt.Errorf("memstore: create %s: %w", session, dynamo.ErrDeleting)
	}
	if rc != nil {
		if old, ok := l.receipts[rc.Key]; ok && old.Expires.Unix() > now.Unix() {
			return fmt.Errorf("memstore: append facts %d..%d of %s: %w", first, last, session, dynamo.ErrReceiptTaken)
		}
	}
	if have >= first || (first == 1 && hasHead) || (first > 1 && (!hasHead || head.LastSeq != first-1)) {
		return fmt.Errorf("memstore: append facts %d..%d of %s: %w", first, last, session, dynamo.ErrConflict)
	}
	if have != first-1 {
		// The head says first-1 but the facts do not reach it: a log this
		// package never leaves.
		return fmt.Errorf("memstore: append facts %d..%d of %s: the log holds %d facts", first, last, session, have)
	}
	l.facts[session] = append(l.facts[session], items...)
	l.heads[session] = headOf(session, next)
	if rc != nil {
		r := *rc
		r.Answer = slices.Clone(rc.Answer)
		r.Expires = time.Unix(rc.Expires.Unix(), 0).UTC()
		l.receipts[rc.Key] = r
	}
	return nil
}

// headOf is the head a session in state st has, as dynamo.Store writes and
// reads it back: times in UTC, the due time to the millisecond.
func headOf(session string, st reducer.State) dynamo.Head {
	h := dynamo.Head{Session: session, Agent: st.Agent, Owner: st.Owner, Status: st.Status, LastSeq: st.LastSeq,
		Created: st.Created.UTC(), Updated: st.Updated.UTC(), Usage: st.Usage}
	if st.Turn != nil {
		h.Turn, h.Cause = st.Turn.ID, st.Turn.Cause
	}
	if n := st.Next(st.Updated, 0); !n.Due.IsZero() {
		h.Due, h.Why = time.UnixMilli(n.Due.UnixMilli()).UTC(), n.Reason
	}
	return h
}

// decode decodes fact items, which start at seq from.
func decode(session string, items []stored, from int64) ([]reducer.Fact, error) {
	if len(items) == 0 {
		return nil, nil
	}
	out := make([]reducer.Fact, len(items))
	for i, it := range items {
		if err := json.Unmarshal(it.body, &out[i]); err != nil {
			return nil, fmt.Errorf("memstore: fact %d of %s: decode: %w", from+int64(i), session, err)
		}
	}
	return out, nil
}

func (l *Log) items(session string) []stored {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.facts[session] // appends never change the items already there
}

// Facts returns the session's facts with seq > after, in order.
func (l *Log) Facts(ctx context.Context, session string, after int64) ([]reducer.Fact, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memstore: read facts of %s: %w", session, err)
	}
	after = max(after, 0)
	items := l.items(session)
	if after >= int64(len(items)) {
		return nil, nil
	}
	return decode(session, items[after:], after+1)
}

// Tail returns the session's facts from the newest one carrying a snapshot
// (or seq 1) on, in order.
func (l *Log) Tail(ctx context.Context, session string) ([]reducer.Fact, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memstore: read tail of %s: %w", session, err)
	}
	items := l.items(session)
	for i := len(items) - 1; i >= 0; i-- {
		var f struct {
			Snapshot string `json:"snapshot"`
		}
		if err := json.Unmarshal(items[i].body, &f); err != nil {
			return nil, fmt.Errorf("memstore: read tail of %s: fact %d: %w", session, i+1, err)
		}
		if f.Snapshot != "" || i == 0 {
			return decode(session, items[i:], int64(i)+1)
		}
	}
	return nil, nil
}

// Head returns the session's head, or an error matching dynamo.ErrNotFound.
func (l *Log) Head(ctx context.Context, session string) (dynamo.Head, error) {
	if err := ctx.Err(); err != nil {
		return dynamo.Head{}, fmt.Errorf("memstore: read head of %s: %w", session, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.heads[session]
	if !ok {
		return dynamo.Head{}, fmt.Errorf("memstore: read head of %s: %w", session, dynamo.ErrNotFound)
	}
	return h, nil
}

// Rewoke records on the session's head that its wake was re-sent at at and
// moves its due time to next, provided the head still has h's last seq,
// due time and reason; otherwise it returns an error matching
// dynamo.ErrConflict (see dynamo.Store.Rewoke).
func (l *Log) Rewoke(ctx context.Context, h dynamo.Head, at, next time.Time) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: record the re-sent wake of %s: %w", h.Session, err)
	}
	if !h.Why.Wake() || h.Due.IsZero() {
		return fmt.Errorf("memstore: record the re-sent wake of %s: it waits for no wake (%q)", h.Session, h.Why)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	cur, ok := l.heads[h.Session]
	if !ok || cur.LastSeq != h.LastSeq || cur.Why != h.Why || cur.Due.UnixMilli() != h.Due.UnixMilli() {
		return fmt.Errorf("memstore: record the re-sent wake of %s at seq %d: %w", h.Session, h.LastSeq, dynamo.ErrConflict)
	}
	cur.Due, cur.Rewoken = time.UnixMilli(next.UnixMilli()).UTC(), time.UnixMilli(at.UnixMilli()).UTC()
	l.heads[h.Session] = cur
	return nil
}

// ownerCursor is where a page of ByOwner ended.
type ownerCursor struct {
	Owner   string    `json:"o"`
	Created time.Time `json:"c"`
	Session string    `json:"s"`
}

// newer says whether a sorts before b in an owner's listing: newest
// first, ties by session id.
func newer(a, b dynamo.Head) bool {
	if !a.Created.Equal(b.Created) {
		return a.Created.After(b.Created)
	}
	return a.Session > b.Session
}

// ByOwner lists the owner's sessions, newest first, limit a page (0 means
// dynamo.DefaultLimit), from cursor ("" for the first page); the cursor
// returned is "" after the last page.
func (l *Log) ByOwner(ctx context.Context, owner string, limit int32, cursor string) ([]dynamo.Head, string, error) {
	switch {
	case ctx.Err() != nil:
		return nil, "", fmt.Errorf("memstore: list sessions of owner %s: %w", owner, ctx.Err())
	case owner == "":
		return nil, "", errors.New("memstore: list sessions by owner: no owner")
	case limit < 0:
		return nil, "", fmt.Errorf("memstore: list sessions of owner %s: negative limit %d", owner, limit)
	case limit == 0:
		limit = dynamo.DefaultLimit
	}
	var from *dynamo.Head
	if cursor != "" {
		c, err := decodeCursor(cursor)
		if err != nil || c.Owner != owner {
			return nil, "", fmt.Errorf("memstore: list sessions of owner %s: %w", owner, dynamo.ErrBadCursor)
		}
		from = &dynamo.Head{Session: c.Session, Created: c.Created}
	}
	l.mu.Lock()
	var heads []dynamo.Head
	for _, h := range l.heads {
		if h.Owner == owner && (from == nil || newer(*from, h)) {
			heads = append(heads, h)
		}
	}
	l.mu.Unlock()
	slices.SortFunc(heads, func(a, b dynamo.Head) int {
		if newer(a, b) {
			return -1
		}
		return 1
	})
	if len(heads) <= int(limit) {
		return heads, "", nil
	}
	heads = heads[:limit]
	last := heads[len(heads)-1]
	next, err := json.Marshal(ownerCursor{Owner: owner, Created: last.Created, Session: last.Session})
	if err != nil {
		return nil, "", fmt.Errorf("memstore: list sessions of owner %s: %w", owner, err)
	}
	return heads, base64.RawURLEncoding.EncodeToString(next), nil
}

func decodeCursor(cursor string) (ownerCursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return ownerCursor{}, err
	}
	var c ownerCursor
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return ownerCursor{}, err
	}
	if c.Owner == "" || c.Session == "" {
		return ownerCursor{}, errors.New("incomplete cursor")
	}
	return c, nil
}

// Due calls fn with every head of shard due at or before before, and every
// tombstone of the shard whose deferred purge is (as a Head with Session,
// Why dynamo.WhyPurge and Due), the longest overdue first, and returns the
// pages of limit (0 means dynamo.DefaultLimit) it read. It stops at fn's
// first error and returns it. fn may write to the log.
func (l *Log) Due(ctx context.Context, shard int, before time.Time, limit int32, fn func(dynamo.Head) error) (int, error) {
	switch {
	case shard < 0 || shard >= dynamo.DueShards:
		return 0, fmt.Errorf("memstore: list due sessions: shard %d outside 0..%d", shard, dynamo.DueShards-1)
	case limit < 0:
		return 0, fmt.Errorf("memstore: list due sessions: negative limit %d", limit)
	case limit == 0:
		limit = dynamo.DefaultLimit
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("memstore: list due sessions: %w", err)
	}
	cut := before.UnixMilli()
	l.mu.Lock()
	var due []dynamo.Head
	for _, h := range l.heads {
		if !h.Due.IsZero() && h.Due.UnixMilli() <= cut && dynamo.DueShardOf(h.Session) == shard {
			due = append(due, h)
		}
	}
	for _, t := range l.tombs {
		if !t.due.IsZero() && t.due.UnixMilli() <= cut && dynamo.DueShardOf(t.Session) == shard {
			due = append(due, dynamo.Head{Session: t.Session, Why: dynamo.WhyPurge, Due: t.due})
		}
	}
	l.mu.Unlock()
	slices.SortFunc(due, func(a, b dynamo.Head) int {
		if c := a.Due.Compare(b.Due); c != 0 {
			return c
		}
		return strings.Compare(a.Session, b.Session)
	})
	pages := 1 + len(due)/int(limit)
	for _, h := range due {
		if err := fn(h); err != nil {
			return pages, err
		}
	}
	return pages, nil
}

// Receipt returns the unexpired receipt stored under key; ok is false when
// there is none.
func (l *Log) Receipt(ctx context.Context, key string) (dynamo.Receipt, bool, error) {
	if err := ctx.Err(); err != nil {
		return dynamo.Receipt{}, false, fmt.Errorf("memstore: read receipt: %w", err)
	}
	l.mu.Lock()
	rc, ok := l.receipts[key]
	l.mu.Unlock()
	if !ok || !l.now.Now().Before(rc.Expires) {
		return dynamo.Receipt{}, false, nil
	}
	rc.Answer = slices.Clone(rc.Answer)
	return rc, true, nil
}

// Tombstone returns the session's tombstone, or an error matching
// dynamo.ErrNotFound.
func (l *Log) Tombstone(ctx context.Context, session string) (dynamo.Tombstone, error) {
	if err := ctx.Err(); err != nil {
		return dynamo.Tombstone{}, fmt.Errorf("memstore: read tombstone of %s: %w", session, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.tombs[session]
	if !ok {
		return dynamo.Tombstone{}, fmt.Errorf("memstore: read tombstone of %s: %w", session, dynamo.ErrNotFound)
	}
	return t.copy(), nil
}

func (t tomb) copy() dynamo.Tombstone {
	c := t.Tombstone
	c.Fenced = slices.Clone(t.Fenced)
	return c
}

// Bury writes the session's tombstone and deletes its head at once,
// provided the head still has h's last seq and no open turn, and the id's
// earlier tombstone, if any, is purged: otherwise it fails with
// dynamo.ErrConflict (dynamo.ErrTurnOpen when h has an open turn).
func (l *Log) Bury(ctx context.Context, h dynamo.Head, by string, at time.Time) error {
	if h.Turn != "" {
		return fmt.Errorf("memstore: delete %s: %w", h.Session, dynamo.ErrTurnOpen)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: delete %s: %w", h.Session, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	cur, ok := l.heads[h.Session]
	if old, buried := l.tombs[h.Session]; buried && !old.Purged || !ok || cur.LastSeq != h.LastSeq || cur.Turn != "" {
		return fmt.Errorf("memstore: delete %s: %w", h.Session, dynamo.ErrConflict)
	}
	l.tombs[h.Session] = tomb{Tombstone: dynamo.Tombstone{Session: h.Session, Owner: h.Owner, By: by, At: at.UTC()}}
	delete(l.heads, h.Session)
	return nil
}

// Purge deletes a buried session's facts and the receipts written with
// them, and returns how many items it deleted (each fact, and each fact's
// receipt, as dynamo.Store counts them). It refuses a session with a head.
func (l *Log) Purge(ctx context.Context, session string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("memstore: purge %s: %w", session, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.heads[session]; ok {
		return 0, fmt.Errorf("memstore: purge %s: the session has a head; bury it first", session)
	}
	n := 0
	for _, it := range l.facts[session] {
		n++
		if it.receipt != "" {
			delete(l.receipts, it.receipt)
			n++
		}
	}
	delete(l.facts, session)
	return n, nil
}

// DeferPurge records on the session's tombstone that its purge cannot
// finish before until, when the streams' last chunks may go, and makes it
// due then (why dynamo.WhyPurge). It fails for a session with no
// tombstone, or one purged already.
func (l *Log) DeferPurge(ctx context.Context, session string, until time.Time, streams []string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: defer the purge of %s: %w", session, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.tombs[session]
	if !ok || t.Purged {
		return fmt.Errorf("memstore: defer the purge of %s: no tombstone still to purge", session)
	}
	t.Fence = until.UTC()
	t.due = time.UnixMilli(until.UnixMilli()).UTC()
	fenced := slices.Clone(t.Fenced)
	for _, s := range streams {
		if !slices.Contains(fenced, s) {
			fenced = append(fenced, s)
		}
	}
	slices.Sort(fenced)
	t.Fenced = fenced
	l.tombs[session] = t
	return nil
}

// MarkPurged records on the session's tombstone that its purge finished,
// and makes it due no more. It fails for a session with no tombstone.
func (l *Log) MarkPurged(ctx context.Context, session string, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: mark %s purged: %w", session, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.tombs[session]
	if !ok {
		return fmt.Errorf("memstore: mark %s purged: no tombstone", session)
	}
	t.Purged, t.due = true, time.Time{}
	l.tombs[session] = t
	return nil
}

// Sweep calls expired with the head of every idle session last updated
// before before (none when before is zero), and unpurged with every
// tombstone whose purge has not finished; it stops at their first error.
func (l *Log) Sweep(ctx context.Context, before time.Time, expired func(dynamo.Head) error, unpurged func(dynamo.Tombstone) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: sweep: %w", err)
	}
	l.mu.Lock()
	var heads []dynamo.Head
	var tombs []dynamo.Tombstone
	for _, h := range l.heads {
		if !before.IsZero() && h.Status == reducer.Idle && h.Updated.Before(before) {
			heads = append(heads, h)
		}
	}
	for _, t := range l.tombs {
		if !t.Purged {
			tombs = append(tombs, t.copy())
		}
	}
	l.mu.Unlock()
	for _, t := range tombs {
		if err := unpurged(t); err != nil {
			return fmt.Errorf("memstore: sweep: %w", err)
		}
	}
	for _, h := range heads {
		if err := expired(h); err != nil {
			return fmt.Errorf("memstore: sweep: %w", err)
		}
	}
	return nil
}
