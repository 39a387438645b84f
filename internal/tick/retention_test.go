package tick_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/lifecycle"
	"github.com/baton-run/baton/internal/tick"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/turn"
)

// leftOf lists the table's items (pk/sk) and the bucket's objects of
// session id; the stack's table and bucket are the test's own.
func (s *stack) leftOf(t *testing.T, id string) (items, objects []string) {
	t.Helper()
	out, err := s.Clients().DynamoDB.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(s.Table)})
	if err != nil || out.LastEvaluatedKey != nil {
		t.Fatalf("scan: %v (one page expected)", err)
	}
	for _, it := range out.Items {
		if pk := it["pk"].(*types.AttributeValueMemberS).Value; pk == id {
			items = append(items, pk+"/"+it["sk"].(*types.AttributeValueMemberN).Value)
		}
	}
	lo, err := s.Clients().S3.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(s.Bucket)})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range lo.Contents {
		if strings.Contains(aws.ToString(o.Key), "/"+id+"/") {
			objects = append(objects, aws.ToString(o.Key))
		}
	}
	return items, objects
}

// TestRetentionSweep: the sweep deletes a session idle past the retention
// (nothing of it is left in the table or the bucket but its tombstone),
// finishes a delete cut short after its burial, deletes a snapshot no fact
// names, and keeps a recent session whole, its named snapshots included.
func TestRetentionSweep(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newEmuStack(t)
	agent := demoAgent(t, script(t, threeSteps), turn.Limits{})
	old := s.fresh(agent)
	old.sessions.Now = func() time.Time { return time.Now().Add(-40 * 24 * time.Hour) }
	stale := newSession(t, old, "Weather?")
	if out, err := old.runner.Start(ctx, stale); err != nil || out.Cause != "" {
		t.Fatalf("start stale: %+v, %v", out, err)
	}
	inv := s.fresh(agent)
	recent := newSession(t, inv, "Weather?")
	if out, err := inv.runner.Start(ctx, recent); err != nil || out.Cause != "" {
		t.Fatalf("start recent: %+v, %v", out, err)
	}
	orphan := streams.SnapshotKey(recent, 99)
	if err := streams.New(s.Clients().S3, s.Bucket).PutSnapshot(ctx, orphan, map[string]string{"orphan": "yes"}); err != nil {
		t.Fatal(err)
	}
	// An upload into a chat whose first message never came: a file of no
	// session.
	upload := "files/" + ids.New("chat") + "/" + strings.Repeat("ab", 32)
	if _, err := s.Clients().S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(upload), Body: strings.NewReader("%PDF-")}); err != nil {
		t.Fatal(err)
	}
	// A delete cut short: buried, never purged.
	cut := newSession(t, inv, "Bye.")
	h, err := inv.sessions.Head(ctx, cut)
	if err != nil {
		t.Fatal(err)
	}
	if err := dynamo.New(s.Clients().DynamoDB, s.Table).Bury(ctx, h, "alice", time.Now()); err != nil {
		t.Fatal(err)
	}
	_, staleObjects := s.leftOf(t, stale)
	_, recentObjects := s.leftOf(t, recent)
	if len(staleObjects) < 2 || len(recentObjects) < 3 {
		t.Fatalf("before the sweep: stale %v, recent %v; want streams and snapshots", staleObjects, recentObjects)
	}

	sweeper := s.fresh(nil)
	sweeper.sessions.Now = func() time.Time { return time.Now().Add(2 * time.Hour) } // past the snapshot grace
	rep, err := (&tick.Retention{Sessions: sweeper.sessions, After: 30 * 24 * time.Hour}).Run(ctx)
	if err != nil || rep.Expired != 1 || rep.Finished != 1 || rep.Orphans != 1 || rep.Files != 1 {
		t.Fatalf("sweep: %+v, %v; want 1 expired, 1 finished, 1 orphan, 1 file of no session", rep, err)
	}
	if _, err := s.Clients().S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(upload)}); err == nil {
		t.Errorf("the sweep kept %s, a file of no session", upload)
	}
	for _, id := range []string{stale, cut} {
		if items, objects := s.leftOf(t, id); len(items) != 1 || items[0] != id+"/-2" || len(objects) != 0 {
			t.Errorf("%s after the sweep: items %v objects %v, want only its tombstone", id, items, objects)
		}
	}
	tomb, err := dynamo.New(s.Clients().DynamoDB, s.Table).Tombstone(ctx, stale)
	if err != nil || tomb.By != "retention" || !tomb.Purged {
		t.Errorf("stale's tombstone %+v, %v", tomb, err)
	}
	_, left := s.leftOf(t, recent)
	for _, k := range left {
		if k == orphan {
			t.Errorf("orphaned snapshot %s kept", k)
		}
	}
	if len(left) != len(recentObjects)-1 {
		t.Errorf("recent's objects %v after the sweep, want %v less the orphan", left, recentObjects)
	}
	if sess, err := inv.sessions.Load(ctx, recent); err != nil || sess.State.Status != reducer.Idle {
		t.Fatalf("recent session after the sweep: %v", err)
	}
	// A second sweep finds nothing to do.
	if rep, err := (&tick.Retention{Sessions: sweeper.sessions, After: 30 * 24 * time.Hour}).Run(ctx); err != nil || rep != (lifecycle.SweepReport{}) {
		t.Fatalf("second sweep: %+v, %v", rep, err)
	}
}
