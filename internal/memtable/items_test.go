package memtable_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/baton-run/baton/internal/claims/claimsdb"
	"github.com/baton-run/baton/internal/memtable"
)

var _ claimsdb.API = (*memtable.Items)(nil)

func item(pk string, v int) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk},
		"sk": &types.AttributeValueMemberN{Value: "0"}, "v": &types.AttributeValueMemberN{Value: strconv.Itoa(v)}}
}

func versioned(pk string, read int) *types.Put {
	p := &types.Put{Item: item(pk, read+1)}
	if read == 0 {
		p.ConditionExpression = aws.String("attribute_not_exists(pk)")
	} else {
		p.ConditionExpression = aws.String("v = :v")
		p.ExpressionAttributeValues = map[string]types.AttributeValue{":v": &types.AttributeValueMemberN{Value: strconv.Itoa(read)}}
	}
	return p
}

// TestItemsVersionChecks: the broker's conditional puts, alone and in a
// transaction, win only on the version read, and a transaction with one
// stale put writes nothing.
func TestItemsVersionChecks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tb := memtable.New()
	put := func(p *types.Put) error {
		_, err := tb.PutItem(ctx, &dynamodb.PutItemInput{Item: p.Item, ConditionExpression: p.ConditionExpression, ExpressionAttributeValues: p.ExpressionAttributeValues})
		return err
	}
	if err := put(versioned("a", 0)); err != nil {
		t.Fatal(err)
	}
	if err := put(versioned("a", 0)); !errors.As(err, new(*types.ConditionalCheckFailedException)) {
		t.Fatalf("a second create: %v", err)
	}
	if err := put(versioned("a", 1)); err != nil {
		t.Fatal(err)
	}
	if err := put(versioned("a", 1)); !errors.As(err, new(*types.ConditionalCheckFailedException)) {
		t.Fatalf("a put at a stale version: %v", err)
	}
	_, err := tb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: versioned("b", 0)}, {Put: versioned("a", 1)}}})
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || aws.ToString(tce.CancellationReasons[1].Code) != "ConditionalCheckFailed" ||
		aws.ToString(tce.CancellationReasons[0].Code) != "None" {
		t.Fatalf("a transaction with a stale put: %v", err)
	}
	if out, _ := tb.GetItem(ctx, &dynamodb.GetItemInput{Key: item("b", 0)}); out.Item != nil {
		t.Fatalf("the cancelled transaction wrote %v", out.Item)
	}
	if _, err := tb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: versioned("b", 0)}, {Put: versioned("a", 2)}}}); err != nil {
		t.Fatal(err)
	}
	out, err := tb.GetItem(ctx, &dynamodb.GetItemInput{Key: item("a", 0)})
	if err != nil || out.Item["v"].(*types.AttributeValueMemberN).Value != "3" {
		t.Fatalf("a after the transaction: %v %v", out, err)
	}
	if _, err := tb.PutItem(ctx, &dynamodb.PutItemInput{Item: item("c", 1), ConditionExpression: aws.String("attribute_exists(pk)")}); err == nil {
		t.Fatal("a condition Items does not evaluate was taken")
	}
}
