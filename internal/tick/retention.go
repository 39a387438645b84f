package tick

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/baton-run/baton/internal/lifecycle"
	"github.com/baton-run/baton/internal/session"
)

// RetentionDetailType is the detail-type of the scheduled event that runs
// the retention sweep instead of a tick (template.yaml's daily Retention
// schedule on the tick function).
const RetentionDetailType = "baton.retention"

// DefaultSnapshotGrace is how old a snapshot no fact names must be before
// the retention sweep deletes it: a snapshot is written before its fact,
// so a younger one may belong to a compaction or ending still in flight.
const DefaultSnapshotGrace = time.Hour

// Retention is the retention sweep (session.Store.Sweep): it deletes the
// sessions idle for more than After, finishes deletes cut short, and
// deletes orphaned snapshots. It scans the table and lists the bucket, so
// it runs once a day, not every minute.
type Retention struct {
	Sessions *session.Store
	// After is how long an idle session is kept; 0 keeps every session
	// (the sweep still finishes deletes and removes orphaned snapshots).
	After time.Duration
	// SnapshotGrace is DefaultSnapshotGrace when 0.
	SnapshotGrace time.Duration
	Log           *slog.Logger
}

// Run runs the sweep once.
func (r *Retention) Run(ctx context.Context) (lifecycle.SweepReport, error) {
	rep, err := r.Sessions.Sweep(ctx, r.After, orDefault(r.SnapshotGrace, DefaultSnapshotGrace))
	log := r.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("expired", rep.Expired, "finished", rep.Finished, "orphans", rep.Orphans, "files", rep.Files, "retention", r.After)
	if err != nil {
		log.ErrorContext(ctx, "retention sweep failed", "err", err)
		return rep, err
	}
	log.InfoContext(ctx, "retention sweep done")
	return rep, nil
}

// Scheduled is the tick function's handler for both its schedules: the
// event of detail-type RetentionDetailType runs the retention sweep,
// every other the tick.
func Scheduled(t *Tick, r *Retention) func(context.Context, events.EventBridgeEvent) (any, error) {
	return func(ctx context.Context, ev events.EventBridgeEvent) (any, error) {
		if ev.DetailType == RetentionDetailType {
			return r.Run(ctx)
		}
		return t.HandleScheduled(ctx, ev)
	}
}
