package provision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/baton-run/baton/internal/awsenv"
)

// ErrMismatch reports an existing table whose keys or indexes differ from the
// template. Provision never deletes or rebuilds a table; delete it by hand.
var ErrMismatch = errors.New("provision: existing resource does not match the template")

// Resources are the physical names and URLs of what Provision created or
// found.
type Resources struct{ Table, Bucket, QueueURL, DLQURL string }

// tableWait bounds the wait for a new table to become ACTIVE.
const tableWait = 2 * time.Minute

// Provision creates the template's table, bucket, queue and dead-letter queue
// under the names n, reading every setting from tmpl (see NewPlan). It is
// idempotent: an existing table is checked against the template (ErrMismatch
// when keys or indexes differ), an existing bucket gets the template's bucket
// settings again, and an existing queue gets the template's attributes.
func Provision(ctx context.Context, c *awsenv.Clients, tmpl []byte, n Names) (Resources, error) {
	p, err := NewPlan(tmpl, n)
	if err != nil {
		return Resources{}, err
	}
	if err := ensureTable(ctx, c.DynamoDB, p.Table); err != nil {
		return Resources{}, err
	}
	if err := ensureBucket(ctx, c.S3, p.Bucket); err != nil {
		return Resources{}, err
	}
	dlqURL, err := ensureQueue(ctx, c.SQS, p.DLQ.Name, p.DLQ.Attributes)
	if err != nil {
		return Resources{}, err
	}
	dlqARN, err := queueARN(ctx, c.SQS, dlqURL)
	if err != nil {
		return Resources{}, err
	}
	attrs := maps.Clone(p.Queue.Attributes)
	if _, ok := attrs["RedrivePolicy"]; ok {
		rp, err := RedrivePolicy(dlqARN, p.MaxReceiveCount)
		if err != nil {
			return Resources{}, err
		}
		attrs["RedrivePolicy"] = rp
	}
	queueURL, err := ensureQueue(ctx, c.SQS, p.Queue.Name, attrs)
	if err != nil {
		return Resources{}, err
	}
	return Resources{Table: n.Table, Bucket: n.Bucket, QueueURL: queueURL, DLQURL: dlqURL}, nil
}

// RedrivePolicy renders the RedrivePolicy queue attribute.
func RedrivePolicy(dlqARN string, maxReceiveCount int) (string, error) {
	b, err := json.Marshal(struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
		MaxReceiveCount     int    `json:"maxReceiveCount"`
	}{dlqARN, maxReceiveCount})
	if err != nil {
		return "", fmt.Errorf("provision: encode redrive policy: %w", err)
	}
	return string(b), nil
}

func ensureTable(ctx context.Context, db *dynamodb.Client, in *dynamodb.CreateTableInput) error {
	name := aws.ToString(in.TableName)
	_, err := db.CreateTable(ctx, in)
	var inUse *ddbtypes.ResourceInUseException
	switch {
	case err == nil:
	case errors.As(err, &inUse):
		out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName})
		if err != nil {
			return fmt.Errorf("provision: describe table %s: %w", name, err)
		}
		if diff := TableDiff(in, out.Table); diff != "" {
			return fmt.Errorf("%w: table %s: %s", ErrMismatch, name, diff)
		}
	default:
		return fmt.Errorf("provision: create table %s: %w", name, err)
	}
	w := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 500 * time.Millisecond
		o.MaxDelay = 5 * time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName}, tableWait); err != nil {
		return fmt.Errorf("provision: wait for table %s: %w", name, err)
	}
	return nil
}

// TableDiff describes how an existing table's key schema, attribute
// definitions and secondary indexes differ from want; "" when they agree.
// Billing mode and throughput are not compared (emulators report them
// loosely).
func TableDiff(want *dynamodb.CreateTableInput, got *ddbtypes.TableDescription) string {
	if got == nil {
		return "no table description"
	}
	var diffs []string
	if a, b := keysString(want.KeySchema), keysString(got.KeySchema); a != b {
		diffs = append(diffs, fmt.Sprintf("key schema %s, template %s", b, a))
	}
	if a, b := attrsString(want.AttributeDefinitions), attrsString(got.AttributeDefinitions); a != b {
		diffs = append(diffs, fmt.Sprintf("attributes %s, template %s", b, a))
	}
	gsi := func(g ddbtypes.GlobalSecondaryIndex) index { return index{g.IndexName, g.KeySchema, g.Projection} }
	gotGSI := func(g ddbtypes.GlobalSecondaryIndexDescription) index {
		return index{g.IndexName, g.KeySchema, g.Projection}
	}
	if a, b := indexesString(want.GlobalSecondaryIndexes, gsi), indexesString(got.GlobalSecondaryIndexes, gotGSI); a != b {
		diffs = append(diffs, fmt.Sprintf("global secondary indexes %s, template %s", b, a))
	}
	lsi := func(l ddbtypes.LocalSecondaryIndex) index { return index{l.IndexName, l.KeySchema, l.Projection} }
	gotLSI := func(l ddbtypes.LocalSecondaryIndexDescription) index {
		return index{l.IndexName, l.KeySchema, l.Projection}
	}
	if a, b := indexesString(want.LocalSecondaryIndexes, lsi), indexesString(got.LocalSecondaryIndexes, gotLSI); a != b {
		diffs = append(diffs, fmt.Sprintf("local secondary indexes %s, template %s", b, a))
	}
	return strings.Join(diffs, "; ")
}

func keysString(ks []ddbtypes.KeySchemaElement) string {
	parts := make([]string, 0, len(ks))
	for _, k := range ks {
		parts = append(parts, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func attrsString(as []ddbtypes.AttributeDefinition) string {
	parts := make([]string, 0, len(as))
	for _, a := range as {
		parts = append(parts, aws.ToString(a.AttributeName)+":"+string(a.AttributeType))
	}
	slices.Sort(parts)
	return "[" + strings.Join(parts, " ") + "]"
}

// index is a secondary index's name, keys and projection, of whichever
// type holds them (a table's input or its description).
type index struct {
	name       *string
	keys       []ddbtypes.KeySchemaElement
	projection *ddbtypes.Projection
}

// indexesString is the indexes ixs by name, each as indexString writes it.
func indexesString[I any](ixs []I, of func(I) index) string {
	m := map[string]string{}
	for _, ix := range ixs {
		i := of(ix)
		m[aws.ToString(i.name)] = indexString(i.keys, i.projection)
	}
	return mapString(m)
}

func indexString(ks []ddbtypes.KeySchemaElement, p *ddbtypes.Projection) string {
	s := keysString(ks)
	if p != nil {
		s += " " + string(p.ProjectionType)
		if len(p.NonKeyAttributes) > 0 {
			nk := slices.Clone(p.NonKeyAttributes)
			slices.Sort(nk)
			s += "(" + strings.Join(nk, ",") + ")"
		}
	}
	return s
}

func mapString(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func ensureBucket(ctx context.Context, c *s3.Client, p BucketPlan) error {
	_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(p.Name)})
	var owned *s3types.BucketAlreadyOwnedByYou
	if err != nil && !errors.As(err, &owned) {
		return fmt.Errorf("provision: create bucket %s: %w", p.Name, err)
	}
	if p.SSEAlgorithm != "" {
		_, err := c.PutBucketEncryption(ctx, &s3.PutBucketEncryptionInput{
			Bucket: aws.String(p.Name),
			ServerSideEncryptionConfiguration: &s3types.ServerSideEncryptionConfiguration{
				Rules: []s3types.ServerSideEncryptionRule{{
					ApplyServerSideEncryptionByDefault: &s3types.ServerSideEncryptionByDefault{
						SSEAlgorithm: s3types.ServerSideEncryption(p.SSEAlgorithm),
					},
				}},
			},
		})
		if err != nil {
			return fmt.Errorf("provision: bucket %s encryption: %w", p.Name, err)
		}
	}
	if p.PublicAccessBlock != nil {
		_, err := c.PutPublicAccessBlock(ctx, &s3.PutPublicAccessBlockInput{
			Bucket:                         aws.String(p.Name),
			PublicAccessBlockConfiguration: p.PublicAccessBlock,
		})
		if err != nil {
			return fmt.Errorf("provision: bucket %s public access block: %w", p.Name, err)
		}
	}
	return nil
}

// ensureQueue creates the queue with attrs, or, when it exists, sets attrs on
// it (CreateQueue refuses differing attributes on AWS and ignores them on
// some emulators).
func ensureQueue(ctx context.Context, c *sqs.Client, name string, attrs map[string]string) (string, error) {
	got, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	var missing *sqstypes.QueueDoesNotExist
	switch {
	case err == nil:
		if len(attrs) > 0 {
			_, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: got.QueueUrl, Attributes: attrs})
			if err != nil {
				return "", fmt.Errorf("provision: set attributes of queue %s: %w", name, err)
			}
		}
		return aws.ToString(got.QueueUrl), nil
	case errors.As(err, &missing) || apiCode(err) == "AWS.SimpleQueueService.NonExistentQueue":
		out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			return "", fmt.Errorf("provision: create queue %s: %w", name, err)
		}
		return aws.ToString(out.QueueUrl), nil
	default:
		return "", fmt.Errorf("provision: look up queue %s: %w", name, err)
	}
}

func queueARN(ctx context.Context, c *sqs.Client, url string) (string, error) {
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", fmt.Errorf("provision: queue ARN of %s: %w", url, err)
	}
	arn := out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	if arn == "" {
		return "", fmt.Errorf("provision: queue %s reported no ARN", url)
	}
	return arn, nil
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
