package memtable

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Items is a DynamoDB table in memory with the calls the claims broker
// makes (claimsdb.API): GetItem by key, and PutItem and
// TransactWriteItems of puts, each on the condition attribute_not_exists(pk)
// or v = :v. A failed condition fails as DynamoDB does: a
// ConditionalCheckFailedException from PutItem, a
// TransactionCanceledException naming the failed item from a transaction,
// which then writes nothing. It refuses other conditions and other
// transaction items, so a caller that needs more finds out. It ignores the
// table name. It is safe for concurrent use.
type Items struct {
	mu    sync.Mutex
	items map[itemKey]map[string]types.AttributeValue
}

type itemKey struct{ pk, sk string }

// New is an empty table.
func New() *Items { return &Items{items: map[itemKey]map[string]types.AttributeValue{}} }

func keyOf(item map[string]types.AttributeValue) (itemKey, error) {
	pk, ok1 := item["pk"].(*types.AttributeValueMemberS)
	sk, ok2 := item["sk"].(*types.AttributeValueMemberN)
	if !ok1 || !ok2 {
		return itemKey{}, fmt.Errorf("memtable: an item's key is a string pk and a number sk")
	}
	return itemKey{pk.Value, sk.Value}, nil
}

// GetItem returns the item at the key, or none.
func (t *Items) GetItem(ctx context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k, err := keyOf(in.Key)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return &dynamodb.GetItemOutput{Item: maps.Clone(t.items[k])}, nil
}

// holds reports whether the stored item old (nil: none) meets cond.
func holds(cond *string, values map[string]types.AttributeValue, old map[string]types.AttributeValue) (bool, error) {
	switch aws.ToString(cond) {
	case "":
		return true, nil
	case "attribute_not_exists(pk)":
		return old == nil, nil
	case "v = :v":
		want, ok := values[":v"].(*types.AttributeValueMemberN)
		if !ok {
			return false, fmt.Errorf("memtable: condition v = :v without a number :v")
		}
		have, ok := old["v"].(*types.AttributeValueMemberN)
		return ok && have.Value == want.Value, nil
	}
	return false, fmt.Errorf("memtable: condition %q is not one Items evaluates", aws.ToString(cond))
}

// PutItem stores the item if its condition holds.
func (t *Items) PutItem(ctx context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k, err := keyOf(in.Item)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	ok, err := holds(in.ConditionExpression, in.ExpressionAttributeValues, t.items[k])
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
	}
	t.items[k] = maps.Clone(in.Item)
	return &dynamodb.PutItemOutput{}, nil
}

// TransactWriteItems stores every put if every condition holds, and none
// otherwise.
func (t *Items) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	keys := make([]itemKey, len(in.TransactItems))
	seen := map[itemKey]bool{}
	for i, it := range in.TransactItems {
		if it.Put == nil || it.Delete != nil || it.Update != nil || it.ConditionCheck != nil {
			return nil, fmt.Errorf("memtable: transaction item %d is not a put", i)
		}
		k, err := keyOf(it.Put.Item)
		if err != nil {
			return nil, err
		}
		if seen[k] {
			return nil, fmt.Errorf("memtable: transaction puts item %v twice", k)
		}
		seen[k], keys[i] = true, k
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	reasons := make([]types.CancellationReason, len(keys))
	failed := false
	for i, it := range in.TransactItems {
		ok, err := holds(it.Put.ConditionExpression, it.Put.ExpressionAttributeValues, t.items[keys[i]])
		if err != nil {
			return nil, err
		}
		reasons[i].Code = aws.String("None")
		if !ok {
			reasons[i].Code, failed = aws.String("ConditionalCheckFailed"), true
		}
	}
	if failed {
		return nil, &types.TransactionCanceledException{Message: aws.String("Transaction cancelled"), CancellationReasons: reasons}
	}
	for i, it := range in.TransactItems {
		t.items[keys[i]] = maps.Clone(it.Put.Item)
	}
	return &dynamodb.TransactWriteItemsOutput{}, nil
}
