package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/baton-run/baton/pkg/reducer"
)

// Lost reports whether the session, which waits for a wake, must be sent it
// again at now: before the tick re-sent it, when it has waited longer than
// grace past Due (reducer.Need.Lost); after (Rewoken set), once Due, one
// grace after that re-send, has come. A grace of zero or less never takes a
// wake as lost.
func (h Head) Lost(now time.Time, grace time.Duration) bool {
	if h.Rewoken.IsZero() {
		return reducer.Need{Reason: h.Why, Due: h.Due}.Lost(now, grace)
	}
	return h.Why.Wake() && grace > 0 && !now.Before(h.Due)
}

// Rewoke records on the session's head that its wake was re-sent at at, and
// moves its due time to next (at plus the tick's grace): the due index
// leaves the session out until then, and Head.Lost says it is lost again
// only from then. It is one conditional update, made only if the head is
// still h, with the same last seq, due time and reason; otherwise, when the
// session moved on or another run recorded its own re-send first, it
// returns an error matching ErrConflict and changes nothing. A write whose
// answer was lost and whose resend failed the condition is read back: the
// head as this call would leave it is success. The session's next append
// writes the head whole, which drops the record.
func (s *Store) Rewoke(ctx context.Context, h Head, at, next time.Time) error {
	if !h.Why.Wake() || h.Due.IsZero() {
		return fmt.Errorf("dynamo: record the re-sent wake of %s: it waits for no wake (%q)", h.Session, h.Why)
	}
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 map[string]types.AttributeValue{attrPK: str(h.Session), attrSK: num(0)},
		UpdateExpression:    aws.String("SET #due = :next, #rw = :at"),
		ConditionExpression: aws.String("#seq = :seq AND #due = :due AND #why = :why"),
		ExpressionAttributeNames: map[string]string{
			"#due": attrDue, "#rw": attrRewoken, "#seq": attrLastSeq, "#why": attrWhy,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":next": num(next.UnixMilli()), ":at": num(at.UnixMilli()),
			":seq": num(h.LastSeq), ":due": num(h.Due.UnixMilli()), ":why": str(string(h.Why)),
		},
	}, s.count...)
	if conditionFailed(err) {
		// A lost answer the SDK sent again fails on the write it made
		// itself: the head as this call left it is success.
		if cur, rerr := s.Head(ctx, h.Session); rerr == nil && cur.LastSeq == h.LastSeq && cur.Why == h.Why &&
			cur.Rewoken.UnixMilli() == at.UnixMilli() && cur.Due.UnixMilli() == next.UnixMilli() {
			return nil
		}
		return fmt.Errorf("dynamo: record the re-sent wake of %s at seq %d: %w", h.Session, h.LastSeq, ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("dynamo: record the re-sent wake of %s: %w", h.Session, err)
	}
	return nil
}
