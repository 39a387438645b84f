package provision

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/awslabs/goformation/v7/cloudformation"
	cfnddb "github.com/awslabs/goformation/v7/cloudformation/dynamodb"
)

// Names are the physical names Provision gives the template's resources. In
// a deployed stack CloudFormation names them; locally they are fixed.
type Names struct{ Table, Bucket, Queue string }

// DefaultNames are the local names the dev server, tests and the LocalStack
// init script (localstack/init/ready.d/provision.sh) use.
func DefaultNames() Names {
	return Names{Table: "baton-sessions", Bucket: "baton-streams", Queue: "baton-wakes"}
}

// DLQ is the name of the wake queue's dead-letter queue.
func (n Names) DLQ() string { return n.Queue + "-dlq" }

// Plan is what Provision creates, every setting read from the template.
type Plan struct {
	Table  *dynamodb.CreateTableInput
	Bucket BucketPlan
	Queue  QueuePlan
	DLQ    QueuePlan
	// MaxReceiveCount is the maxReceiveCount of the queue's redrive policy
	// to DLQ; Provision adds the RedrivePolicy attribute once it knows the
	// DLQ's ARN.
	MaxReceiveCount int
}

// BucketPlan is the stream bucket and the settings Provision applies to it.
type BucketPlan struct {
	Name string
	// SSEAlgorithm is the default encryption, "AES256" or "aws:kms"; empty
	// for none.
	SSEAlgorithm string
	// PublicAccessBlock is nil when the template sets none.
	PublicAccessBlock *s3types.PublicAccessBlockConfiguration
}

// QueuePlan is one SQS queue: its name and attributes (as SetQueueAttributes
// takes them).
type QueuePlan struct {
	// LogicalID is the queue's logical id in the template.
	LogicalID  string
	Name       string
	Attributes map[string]string
}

// Properties Provision honours or deliberately leaves to CloudFormation. A
// template property in neither list is refused, so that adding one to
// template.yaml forces a decision here rather than a silent local drift.
func tableProperties() (handled, ignored []string) {
	return []string{"AttributeDefinitions", "KeySchema", "GlobalSecondaryIndexes", "LocalSecondaryIndexes", "BillingMode", "ProvisionedThroughput"},
		// Backups, encryption at rest, tags and the name do not change
		// behaviour locally; the name comes from Names. TTL only deletes
		// expired receipts, which reads already ignore.
		[]string{"PointInTimeRecoverySpecification", "SSESpecification", "Tags", "TableName", "DeletionProtectionEnabled", "ContributorInsightsSpecification", "TimeToLiveSpecification"}
}

func bucketProperties() (handled, ignored []string) {
	return []string{"BucketEncryption", "PublicAccessBlockConfiguration"},
		// Lifecycle rules only clean up over days; BucketOwnerEnforced only
		// disables ACLs, which baton never sets (and kumo v0.33.1 cannot store
		// ownership controls); tags and the name do not change behaviour.
		[]string{"LifecycleConfiguration", "OwnershipControls", "Tags", "BucketName"}
}

func queueProperties() (handled, ignored []string) {
	return []string{"VisibilityTimeout", "MessageRetentionPeriod", "DelaySeconds", "MaximumMessageSize", "ReceiveMessageWaitTimeSeconds", "SqsManagedSseEnabled", "RedrivePolicy"},
		// Customer-managed KMS keys do not exist locally; tags and the name
		// do not change behaviour.
		[]string{"KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds", "Tags", "QueueName"}
}

// NewPlan reads the table (SessionsTable), bucket (StreamsBucket), queue
// (WakeQueue) and the dead-letter queue its RedrivePolicy names from the
// template.
func NewPlan(tmpl []byte, n Names) (Plan, error) {
	decoded, err := Decode(tmpl)
	if err != nil {
		return Plan{}, err
	}
	tree, _ := dropNoValue(decoded).(map[string]any)
	t, err := parseTree(tree)
	if err != nil {
		return Plan{}, err
	}
	var p Plan
	if p.Table, err = tablePlan(tree, t, n.Table); err != nil {
		return Plan{}, err
	}
	if p.Bucket, err = bucketPlan(tree, t, n.Bucket); err != nil {
		return Plan{}, err
	}
	if p.Queue, err = queuePlan(tree, t, QueueResource, n.Queue); err != nil {
		return Plan{}, err
	}
	dlqID, maxReceive, err := redrive(tree)
	if err != nil {
		return Plan{}, err
	}
	p.MaxReceiveCount = maxReceive
	if p.DLQ, err = queuePlan(tree, t, dlqID, n.DLQ()); err != nil {
		return Plan{}, err
	}
	if _, ok := p.DLQ.Attributes["RedrivePolicy"]; ok {
		return Plan{}, fmt.Errorf("provision: %s: a dead-letter queue with its own RedrivePolicy is not supported", dlqID)
	}
	return p, nil
}

// properties returns a resource's Properties map after checking its type and
// that every property is known.
func properties(tree map[string]any, id, typ string, handled, ignored []string) (map[string]any, error) {
	resources, _ := tree["Resources"].(map[string]any)
	res, ok := resources[id].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("provision: template has no resource %s", id)
	}
	if got := res["Type"]; got != typ {
		return nil, fmt.Errorf("provision: %s is %v, want %s", id, got, typ)
	}
	if _, ok := res["Condition"]; ok {
		return nil, fmt.Errorf("provision: %s: conditional resources are not supported", id)
	}
	props, _ := res["Properties"].(map[string]any)
	for k := range props {
		if !slices.Contains(handled, k) && !slices.Contains(ignored, k) {
			return nil, fmt.Errorf("provision: %s property %s is not handled; teach internal/provision how to create it locally, or to ignore it", id, k)
		}
	}
	return props, nil
}

func tablePlan(tree map[string]any, t *cloudformation.Template, name string) (*dynamodb.CreateTableInput, error) {
	handled, ignored := tableProperties()
	if _, err := properties(tree, TableResource, "AWS::DynamoDB::Table", handled, ignored); err != nil {
		return nil, err
	}
	tbl, err := t.GetDynamoDBTableWithName(TableResource)
	if err != nil {
		return nil, fmt.Errorf("provision: %s: %w", TableResource, err)
	}
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: ddbtypes.BillingModeProvisioned, // CloudFormation's default
		KeySchema:   keySchema(tbl.KeySchema),
	}
	if tbl.BillingMode != nil {
		in.BillingMode = ddbtypes.BillingMode(*tbl.BillingMode)
	}
	if tbl.ProvisionedThroughput != nil {
		in.ProvisionedThroughput = throughput(tbl.ProvisionedThroughput)
	}
	for _, a := range tbl.AttributeDefinitions {
		in.AttributeDefinitions = append(in.AttributeDefinitions, ddbtypes.AttributeDefinition{
			AttributeName: aws.String(a.AttributeName),
			AttributeType: ddbtypes.ScalarAttributeType(a.AttributeType),
		})
	}
	for _, g := range tbl.GlobalSecondaryIndexes {
		gsi := ddbtypes.GlobalSecondaryIndex{
			IndexName:  aws.String(g.IndexName),
			KeySchema:  keySchema(g.KeySchema),
			Projection: projection(g.Projection),
		}
		if g.ProvisionedThroughput != nil {
			gsi.ProvisionedThroughput = throughput(g.ProvisionedThroughput)
		}
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, gsi)
	}
	for _, l := range tbl.LocalSecondaryIndexes {
		in.LocalSecondaryIndexes = append(in.LocalSecondaryIndexes, ddbtypes.LocalSecondaryIndex{
			IndexName:  aws.String(l.IndexName),
			KeySchema:  keySchema(l.KeySchema),
			Projection: projection(l.Projection),
		})
	}
	if len(in.KeySchema) == 0 || len(in.AttributeDefinitions) == 0 {
		return nil, fmt.Errorf("provision: %s has no KeySchema or AttributeDefinitions", TableResource)
	}
	return in, nil
}

func keySchema(ks []cfnddb.Table_KeySchema) []ddbtypes.KeySchemaElement {
	out := make([]ddbtypes.KeySchemaElement, 0, len(ks))
	for _, k := range ks {
		out = append(out, ddbtypes.KeySchemaElement{
			AttributeName: aws.String(k.AttributeName),
			KeyType:       ddbtypes.KeyType(k.KeyType),
		})
	}
	return out
}

func projection(p *cfnddb.Table_Projection) *ddbtypes.Projection {
	out := &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeKeysOnly} // CloudFormation's default
	if p == nil {
		return out
	}
	if p.ProjectionType != nil {
		out.ProjectionType = ddbtypes.ProjectionType(*p.ProjectionType)
	}
	if len(p.NonKeyAttributes) > 0 {
		out.NonKeyAttributes = slices.Clone(p.NonKeyAttributes)
	}
	return out
}

func throughput(p *cfnddb.Table_ProvisionedThroughput) *ddbtypes.ProvisionedThroughput {
	return &ddbtypes.ProvisionedThroughput{
		ReadCapacityUnits:  aws.Int64(int64(p.ReadCapacityUnits)),
		WriteCapacityUnits: aws.Int64(int64(p.WriteCapacityUnits)),
	}
}

func bucketPlan(tree map[string]any, t *cloudformation.Template, name string) (BucketPlan, error) {
	handled, ignored := bucketProperties()
	if _, err := properties(tree, BucketResource, "AWS::S3::Bucket", handled, ignored); err != nil {
		return BucketPlan{}, err
	}
	b, err := t.GetS3BucketWithName(BucketResource)
	if err != nil {
		return BucketPlan{}, fmt.Errorf("provision: %s: %w", BucketResource, err)
	}
	p := BucketPlan{Name: name}
	if b.BucketEncryption != nil {
		for _, r := range b.BucketEncryption.ServerSideEncryptionConfiguration {
			if r.ServerSideEncryptionByDefault != nil {
				p.SSEAlgorithm = r.ServerSideEncryptionByDefault.SSEAlgorithm
			}
		}
	}
	if c := b.PublicAccessBlockConfiguration; c != nil {
		p.PublicAccessBlock = &s3types.PublicAccessBlockConfiguration{
			BlockPublicAcls:       aws.Bool(c.BlockPublicAcls != nil && *c.BlockPublicAcls),
			BlockPublicPolicy:     aws.Bool(c.BlockPublicPolicy != nil && *c.BlockPublicPolicy),
			IgnorePublicAcls:      aws.Bool(c.IgnorePublicAcls != nil && *c.IgnorePublicAcls),
			RestrictPublicBuckets: aws.Bool(c.RestrictPublicBuckets != nil && *c.RestrictPublicBuckets),
		}
	}
	return p, nil
}

func queuePlan(tree map[string]any, t *cloudformation.Template, id, name string) (QueuePlan, error) {
	handled, ignored := queueProperties()
	if _, err := properties(tree, id, "AWS::SQS::Queue", handled, ignored); err != nil {
		return QueuePlan{}, err
	}
	q, err := t.GetSQSQueueWithName(id)
	if err != nil {
		return QueuePlan{}, fmt.Errorf("provision: %s: %w", id, err)
	}
	attrs := map[string]string{}
	setInt := func(k string, v *int) {
		if v != nil {
			attrs[k] = strconv.Itoa(*v)
		}
	}
	setInt("VisibilityTimeout", q.VisibilityTimeout)
	setInt("MessageRetentionPeriod", q.MessageRetentionPeriod)
	setInt("DelaySeconds", q.DelaySeconds)
	setInt("MaximumMessageSize", q.MaximumMessageSize)
	setInt("ReceiveMessageWaitTimeSeconds", q.ReceiveMessageWaitTimeSeconds)
	if q.SqsManagedSseEnabled != nil {
		attrs["SqsManagedSseEnabled"] = strconv.FormatBool(*q.SqsManagedSseEnabled)
	}
	if q.RedrivePolicy != nil {
		// Filled in by Provision from the DLQ's ARN; marks the need.
		attrs["RedrivePolicy"] = ""
	}
	return QueuePlan{LogicalID: id, Name: name, Attributes: attrs}, nil
}

// redrive returns the logical id of the queue WakeQueue's RedrivePolicy names
// (deadLetterTargetArn must be !GetAtt <Queue>.Arn) and its maxReceiveCount.
func redrive(tree map[string]any) (string, int, error) {
	resources, _ := tree["Resources"].(map[string]any)
	res, _ := resources[QueueResource].(map[string]any)
	props, _ := res["Properties"].(map[string]any)
	rp, ok := props["RedrivePolicy"].(map[string]any)
	if !ok {
		return "", 0, fmt.Errorf("provision: %s has no RedrivePolicy", QueueResource)
	}
	getAtt, _ := rp["deadLetterTargetArn"].(map[string]any)
	ref, _ := getAtt["Fn::GetAtt"].([]any)
	if len(ref) != 2 || ref[1] != "Arn" {
		return "", 0, fmt.Errorf("provision: %s RedrivePolicy.deadLetterTargetArn must be !GetAtt <Queue>.Arn of a queue in the template", QueueResource)
	}
	dlq, _ := ref[0].(string)
	maxReceive, err := toInt(rp["maxReceiveCount"])
	if err != nil {
		return "", 0, fmt.Errorf("provision: %s RedrivePolicy.maxReceiveCount: %w", QueueResource, err)
	}
	return dlq, maxReceive, nil
}

func toInt(v any) (int, error) {
	switch x := v.(type) {
	case int:
		return x, nil
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil {
			return 0, fmt.Errorf("not an integer: %w", err)
		}
		return n, nil
	case nil:
		return 0, errors.New("missing")
	default:
		return 0, fmt.Errorf("not an integer: %v", v)
	}
}
