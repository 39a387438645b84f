package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ErrReceiptTaken is matched when an append carried a receipt whose key
// already holds an unexpired receipt: the request was made before, and
// nothing was written.
var ErrReceiptTaken = errors.New("dynamo: receipt key already used")

// Receipt is the answer to a request that wrote, stored under an
// idempotency key in the same transaction as the write, so that a retry of
// the request finds the answer instead of writing again.
type Receipt struct {
	// Key identifies the request, unique per caller; at most 1 KiB.
	Key string
	// Request is a hash of the request, to tell a retry from another
	// request under the same key.
	Request string
	// Answer is what the request was answered; the store does not read it.
	Answer []byte
	// Expires is when the receipt stops counting; the table's TTL deletes
	// it some time after.
	Expires time.Time
}

func receiptPK(key string) string { return receiptPrefix + key }

func checkReceipt(rc *Receipt) error {
	switch {
	case rc.Key == "" || len(rc.Key) > 1024:
		return fmt.Errorf("receipt key of %d bytes, want 1 to 1024", len(rc.Key))
	case rc.Request == "":
		return errors.New("receipt has no request hash")
	case rc.Expires.IsZero():
		return errors.New("receipt has no expiry")
	}
	return nil
}

// receiptPut writes rc unless its key holds a receipt that has not expired
// at now.
func (s *Store) receiptPut(rc *Receipt, now time.Time) *types.Put {
	return &types.Put{
		TableName: aws.String(s.table),
		Item: map[string]types.AttributeValue{
			attrPK:      str(receiptPK(rc.Key)),
			attrSK:      num(receiptSK),
			attrRequest: str(rc.Request),
			attrAnswer:  str(string(rc.Answer)),
			attrExpires: num(rc.Expires.Unix()),
		},
		ConditionExpression:       aws.String("attribute_not_exists(#pk) OR #expires <= :now"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#expires": attrExpires},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": num(now.Unix())},
	}
}

// receiptTaken reports whether err says the condition of transaction item
// i, a receipt, failed.
func receiptTaken(err error, i int) bool { return checkFailedAt(err, i) }

// checkFailedAt reports whether err is a cancelled transaction whose item
// i failed its condition.
func checkFailedAt(err error, i int) bool {
	cancelled, ok := errors.AsType[*types.TransactionCanceledException](err)
	return ok && i < len(cancelled.CancellationReasons) &&
		aws.ToString(cancelled.CancellationReasons[i].Code) == "ConditionalCheckFailed"
}

// Receipt returns the unexpired receipt stored under key, read
// consistently; ok is false when there is none.
func (s *Store) Receipt(ctx context.Context, key string) (rc Receipt, ok bool, err error) {
	out, err := s.getItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            map[string]types.AttributeValue{attrPK: str(receiptPK(key)), attrSK: num(receiptSK)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Receipt{}, false, fmt.Errorf("dynamo: read receipt: %w", err)
	}
	if len(out.Item) == 0 {
		return Receipt{}, false, nil
	}
	exp, err := numAttr(out.Item, attrExpires)
	if err != nil {
		return Receipt{}, false, fmt.Errorf("dynamo: read receipt: %w", err)
	}
	rc = Receipt{Key: key, Request: strAttr(out.Item, attrRequest), Answer: []byte(strAttr(out.Item, attrAnswer)),
		Expires: time.Unix(exp, 0).UTC()}
	if !s.now.Now().Before(rc.Expires) {
		return Receipt{}, false, nil
	}
	return rc, true, nil
}
