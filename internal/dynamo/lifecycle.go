package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/baton-run/baton/internal/retry"
	"github.com/baton-run/baton/pkg/reducer"
)

// Tombstone items: pk = session, sk = -2, deletedOwner, deletedBy, deletedAt, and
// purged once every other item and object of the session is gone. A
// tombstone is the one thing a deleted session leaves behind. One whose
// purge waits for an invocation that may still run (DeferPurge) also holds
// fence and fenced, and sits in the byDue index (dueShard, due, why =
// WhyPurge) until MarkPurged.
const (
	tombstoneSK   = -2
	attrDeletedBy = "deletedBy" // S: tombstone: who deleted the session
	attrDeletedAt = "deletedAt" // S: tombstone: when
	attrPurged    = "purged"    // S: tombstone: when the purge finished; absent until then
	attrFence     = "fence"     // S: tombstone: until when an invocation may still write a fenced stream
	attrFenced    = "fenced"    // SS: tombstone: the streams whose last chunk (the fence) stays until then
	attrReceipt   = "receipt"   // S: on a fact item written with a receipt, the receipt's pk
	// S: tombstone: the session's owner; not attrOwner, which would put
	// the tombstone in the byOwner index.
	attrDeletedOwner = "deletedOwner"
)

// WhyPurge is the byDue reason of a tombstone whose purge was deferred
// (DeferPurge): Due passes it as a Head with only Session, Why and Due set,
// and the tick finishes the purge once it is due.
const WhyPurge reducer.Reason = "purge"

// ErrTurnOpen is matched when a session to delete has an open turn (or got
// one while it was being deleted): nothing was deleted.
var ErrTurnOpen = errors.New("dynamo: the session has an open turn")

// ErrDeleting is matched when a session is created under the id of an
// earlier session whose delete has not finished: nothing was written. The
// id is free again once the delete's purge is done.
var ErrDeleting = errors.New("dynamo: an earlier session of this id is still being deleted")

// Tombstone says who deleted a session and when.
type Tombstone struct {
	Session, Owner, By string
	At                 time.Time
	// Purged is whether the session's facts, receipts and objects are all
	// gone; a tombstone not purged is a delete still to finish.
	Purged bool
	// Fence, when set, is when the last invocation that may still write
	// the session's Fenced streams stops (its lease): until then each of
	// those streams keeps its last chunk, the fence that refuses the
	// invocation's next write (see DeferPurge).
	Fence  time.Time
	Fenced []string
}

// A session id may be used again once the delete of its earlier session
// has finished: reusable is the condition on the id's tombstone item that
// says so (none, or one marked purged). Creating a session checks it in
// the same transaction (reuseCheck), so no session is created while an
// earlier one of that id is still being purged; burying checks it too,
// and replaces the purged tombstone of the earlier session with its own.
const reusable = "attribute_not_exists(#pk) OR attribute_exists(#purged)"

// reuseCheck is the transaction item that checks, as a session is
// created, that its id is reusable.
func (s *Store) reuseCheck(session string) types.TransactWriteItem {
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String(s.table),
		Key:                      map[string]types.AttributeValue{attrPK: str(session), attrSK: num(tombstoneSK)},
		ConditionExpression:      aws.String(reusable),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#purged": attrPurged}}}
}

// Bury writes the session's tombstone and deletes its head in one
// transaction, provided the head still says what h says (same last seq, no
// open turn). From then on the session is not found; its facts and
// receipts stay until Purge removes them. It returns an error matching
// ErrTurnOpen or ErrConflict when the head changed.
func (s *Store) Bury(ctx context.Context, h Head, by string, at time.Time) error {
	tomb := map[string]types.AttributeValue{
		attrPK: str(h.Session), attrSK: num(tombstoneSK), attrDeletedOwner: str(h.Owner),
		attrDeletedBy: str(by), attrDeletedAt: str(formatTime(at)),
	}
	if h.Owner == "" {
		delete(tomb, attrDeletedOwner)
	}
	in := &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.table), Item: tomb,
			ConditionExpression:      aws.String(reusable),
			ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#purged": attrPurged}}},
		{Delete: &types.Delete{TableName: aws.String(s.table),
			Key:                       map[string]types.AttributeValue{attrPK: str(h.Session), attrSK: num(0)},
			ConditionExpression:       aws.String("#lastSeq = :seq AND attribute_not_exists(#turn)"),
			ExpressionAttributeNames:  map[string]string{"#lastSeq": attrLastSeq, "#turn": attrTurn},
			ExpressionAttributeValues: map[string]types.AttributeValue{":seq": num(h.LastSeq)}}},
	}}
	if h.Turn != "" {
		return fmt.Errorf("dynamo: delete %s: %w", h.Session, ErrTurnOpen)
	}
	if err := s.transact(ctx, in); err != nil {
		if conditionFailed(err) {
			return fmt.Errorf("dynamo: delete %s: %w", h.Session, ErrConflict)
		}
		return fmt.Errorf("dynamo: delete %s: %w", h.Session, err)
	}
	return nil
}

// Tombstone returns the session's tombstone, or an error matching
// ErrNotFound when it has none.
func (s *Store) Tombstone(ctx context.Context, session string) (Tombstone, error) {
	out, err := s.getItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            map[string]types.AttributeValue{attrPK: str(session), attrSK: num(tombstoneSK)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Tombstone{}, fmt.Errorf("dynamo: read tombstone of %s: %w", session, err)
	}
	if len(out.Item) == 0 {
		return Tombstone{}, fmt.Errorf("dynamo: read tombstone of %s: %w", session, ErrNotFound)
	}
	return decodeTombstone(out.Item), nil
}

func decodeTombstone(item map[string]types.AttributeValue) Tombstone {
	at, _ := time.Parse(time.RFC3339Nano, strAttr(item, attrDeletedAt))
	t := Tombstone{Session: strAttr(item, attrPK), Owner: strAttr(item, attrDeletedOwner), By: strAttr(item, attrDeletedBy),
		At: at, Purged: strAttr(item, attrPurged) != ""}
	if v := strAttr(item, attrFence); v != "" {
		t.Fence, _ = time.Parse(time.RFC3339Nano, v)
	}
	if ss, ok := item[attrFenced].(*types.AttributeValueMemberSS); ok {
		t.Fenced = ss.Value
	}
	return t
}

// DeferPurge records on the session's tombstone that the purge of its
// objects cannot finish before until: an invocation whose turn was ended
// under it (a cancel) may still be running, and learns of the end only
// when its next chunk write finds the stream's last chunk taken. So the
// last chunks of streams stay until then, and the tombstone is put in the
// byDue index at until (why WhyPurge) for the tick to finish the purge.
// until and streams are added to what the tombstone holds (the later
// time, the union of streams). It fails for a session with no tombstone,
// or one purged already.
func (s *Store) DeferPurge(ctx context.Context, session string, until time.Time, streams []string) error {
	names := map[string]string{"#fence": attrFence, "#shard": attrDueShard, "#due": attrDue, "#why": attrWhy,
		"#by": attrDeletedBy, "#purged": attrPurged}
	vals := map[string]types.AttributeValue{
		":fence": str(formatTime(until)), ":shard": str(dueShardKey(DueShardOf(session))),
		":due": num(until.UnixMilli()), ":why": str(string(WhyPurge)),
	}
	update := "SET #fence = :fence, #shard = :shard, #due = :due, #why = :why"
	if len(streams) > 0 {
		names["#fenced"], vals[":fenced"] = attrFenced, &types.AttributeValueMemberSS{Value: streams}
		update += " ADD #fenced :fenced"
	}
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       map[string]types.AttributeValue{attrPK: str(session), attrSK: num(tombstoneSK)},
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String("attribute_exists(#by) AND attribute_not_exists(#purged)"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: vals,
	}, s.count...)
	if err != nil {
		return fmt.Errorf("dynamo: defer the purge of %s: %w", session, err)
	}
	return nil
}

// Purge deletes a buried session's fact items and the idempotency receipts
// written with them, and returns how many items it deleted. It refuses a
// session that has a head. Deleting what is gone is no error, so a purge
// cut short is finished by running it again.
func (s *Store) Purge(ctx context.Context, session string) (int, error) {
	if _, err := s.Head(ctx, session); err == nil {
		return 0, fmt.Errorf("dynamo: purge %s: the session has a head; bury it first", session)
	} else if !errors.Is(err, ErrNotFound) {
		return 0, fmt.Errorf("dynamo: purge %s: %w", session, err)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk > :zero"),
		ProjectionExpression:      aws.String("#pk, #sk, #rc"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK, "#rc": attrReceipt},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(session), ":zero": num(0)},
		ConsistentRead:            aws.Bool(true),
	}
	deleted := 0
	for {
		out, err := s.query(ctx, in)
		if err != nil {
			return deleted, fmt.Errorf("dynamo: purge %s: %w", session, err)
		}
		var keys []map[string]types.AttributeValue
		for _, item := range out.Items {
			keys = append(keys, map[string]types.AttributeValue{attrPK: item[attrPK], attrSK: item[attrSK]})
			if rc := strAttr(item, attrReceipt); rc != "" {
				keys = append(keys, map[string]types.AttributeValue{attrPK: str(rc), attrSK: num(receiptSK)})
			}
		}
		if err := s.deleteKeys(ctx, keys); err != nil {
			return deleted, fmt.Errorf("dynamo: purge %s: %w", session, err)
		}
		deleted += len(keys)
		if len(out.LastEvaluatedKey) == 0 {
			return deleted, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// MarkPurged records on the session's tombstone that its purge finished,
// and takes it out of the byDue index.
func (s *Store) MarkPurged(ctx context.Context, session string, at time.Time) error {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 map[string]types.AttributeValue{attrPK: str(session), attrSK: num(tombstoneSK)},
		UpdateExpression:    aws.String("SET #p = :at REMOVE #shard, #due, #why"),
		ConditionExpression: aws.String("attribute_exists(#by)"),
		ExpressionAttributeNames: map[string]string{"#p": attrPurged, "#by": attrDeletedBy,
			"#shard": attrDueShard, "#due": attrDue, "#why": attrWhy},
		ExpressionAttributeValues: map[string]types.AttributeValue{":at": str(formatTime(at))},
	}, s.count...)
	if err != nil {
		return fmt.Errorf("dynamo: mark %s purged: %w", session, err)
	}
	return nil
}

// deleteKeys deletes items 25 to a BatchWriteItem, sending unprocessed
// ones again.
func (s *Store) deleteKeys(ctx context.Context, keys []map[string]types.AttributeValue) error {
	for len(keys) > 0 {
		n := min(len(keys), 25)
		reqs := make([]types.WriteRequest, 0, n)
		for _, k := range keys[:n] {
			reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: k}})
		}
		keys = keys[n:]
		pending := map[string][]types.WriteRequest{s.table: reqs}
		err := retry.Do(ctx, conflictPolicy, func() error {
			out, err := s.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending}, s.count...)
			if err != nil {
				return err
			}
			if len(out.UnprocessedItems[s.table]) > 0 {
				pending = out.UnprocessedItems
				return errUnprocessed
			}
			return nil
		}, func(err error) bool { return errors.Is(err, errUnprocessed) })
		if err != nil {
			return err
		}
	}
	return nil
}

var errUnprocessed = errors.New("dynamo: unprocessed items")

// Sweep scans the whole table once for the retention sweep: it calls
// expired with the head of every idle session last updated before before
// (skipped when before is zero), and unpurged with every tombstone whose
// purge has not finished. A scan reads every item, so it is run rarely (the
// template runs it once a day), not on every tick.
func (s *Store) Sweep(ctx context.Context, before time.Time, expired func(Head) error, unpurged func(Tombstone) error) error {
	filter := "(#sk = :tomb AND attribute_not_exists(#purged))"
	vals := map[string]types.AttributeValue{":tomb": num(tombstoneSK)}
	names := map[string]string{"#sk": attrSK, "#purged": attrPurged}
	if !before.IsZero() {
		filter += " OR (#sk = :head AND #status = :idle AND #updated < :before)"
		vals[":head"], vals[":idle"], vals[":before"] = num(0), str(string(reducer.Idle)), str(formatTime(before))
		names["#status"], names["#updated"] = attrStatus, attrUpdated
	}
	in := &dynamodb.ScanInput{TableName: aws.String(s.table), FilterExpression: aws.String(filter),
		ExpressionAttributeNames: names, ExpressionAttributeValues: vals, ConsistentRead: aws.Bool(true)}
	for {
		out, err := s.client.Scan(ctx, in, s.count...)
		if err != nil {
			return fmt.Errorf("dynamo: sweep: %w", err)
		}
		for _, item := range out.Items {
			if sk, _ := numAttr(item, attrSK); sk == tombstoneSK {
				err = unpurged(decodeTombstone(item))
			} else if h, derr := decodeHead(item); derr != nil {
				err = derr
			} else {
				err = expired(h)
			}
			if err != nil {
				return fmt.Errorf("dynamo: sweep: %w", err)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
