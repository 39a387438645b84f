package provision

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/baton-run/baton/internal/emulator"
)

// small is a minimal template with the resources Provision needs.
const small = `
Transform: AWS::Serverless-2016-10-31
Globals:
  Function:
    Environment:
      Variables:
        A: !Ref T
        B: global
Resources:
  SessionsTable:
    Type: AWS::DynamoDB::Table
    Properties:
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions:
        - {AttributeName: id, AttributeType: S}
      KeySchema:
        - {AttributeName: id, KeyType: HASH}
  StreamsBucket:
    Type: AWS::S3::Bucket
  Dead:
    Type: AWS::SQS::Queue
  WakeQueue:
    Type: AWS::SQS::Queue
    Properties:
      VisibilityTimeout: 60
      RedrivePolicy:
        deadLetterTargetArn: !GetAtt Dead.Arn
        maxReceiveCount: "3"
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: .
      Environment:
        Variables:
          B: !Sub "${AWS::Region}-${Dead.Arn}"
          C: !Join [",", [!Ref Dead, x]]
          D: !Ref AWS::NoValue
`

func TestDecodeExpandsShortForms(t *testing.T) {
	tree, err := Decode([]byte(`
a: !Ref X
b: !GetAtt Y.Arn
c: !Sub "${Z}"
d: !Join [",", [!Ref X, "y"]]
e: !If [Cond, 1, !Ref AWS::NoValue]
f: 2012-10-17
g: 5
h: true
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"a": map[string]any{"Ref": "X"},
		"b": map[string]any{"Fn::GetAtt": []any{"Y", "Arn"}},
		"c": map[string]any{"Fn::Sub": "${Z}"},
		"d": map[string]any{"Fn::Join": []any{",", []any{map[string]any{"Ref": "X"}, "y"}}},
		"e": map[string]any{"Fn::If": []any{"Cond", 1, map[string]any{"Ref": "AWS::NoValue"}}},
		"f": "2012-10-17",
		"g": 5,
		"h": true,
	}
	if !reflect.DeepEqual(tree, want) {
		t.Errorf("Decode\n got %#v\nwant %#v", tree, want)
	}
}

func TestDecodeRejects(t *testing.T) {
	for name, src := range map[string]string{
		"not a mapping": "- a\n- b\n",
		"bad GetAtt":    "a: !GetAtt NoDot\n",
		"duplicate key": "a: 1\na: 2\n",
		"merge key":     "x: &x {a: 1}\ny:\n  <<: *x\n",
		"not YAML":      "a: [\n",
	} {
		if _, err := Decode([]byte(src)); err == nil {
			t.Errorf("%s: Decode succeeded", name)
		}
	}
}

func TestReferences(t *testing.T) {
	refs, err := References([]byte(`
Resources:
  R:
    Properties:
      A: !Sub "${X}/${Y.Arn}/${!Literal}/${Local}/${AWS::Region}"
      B: !Sub ["${Local}-${Z}", {Local: !Ref W}]
      C: !GetAtt V.Name
`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range refs {
		got = append(got, r.Func+" "+r.Target+" "+r.Attribute)
	}
	want := []string{
		"Fn::Sub X ", "Fn::Sub Y Arn", "Fn::Sub Local ", "Fn::Sub AWS::Region ",
		"Fn::Sub Z ", "Ref W ",
		"Fn::GetAtt V Name",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("References\n got %q\nwant %q", got, want)
	}
}

func TestFunctionEnvMergesGlobals(t *testing.T) {
	env, err := FunctionEnv([]byte(small))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{"Fn": {
		"A": "!Ref T",
		"B": "!Sub ${AWS::Region}-${Dead.Arn}",
		"C": `!Join [",",["!Ref Dead","x"]]`,
	}}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("FunctionEnv\n got %q\nwant %q", env, want)
	}
}

func TestNewPlan(t *testing.T) {
	p, err := NewPlan([]byte(small), Names{Table: "t", Bucket: "b", Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(p.Table.TableName) != "t" || p.Table.BillingMode != ddbtypes.BillingModePayPerRequest {
		t.Errorf("table %+v", p.Table)
	}
	if p.DLQ.Name != "q-dlq" || p.DLQ.LogicalID != "Dead" || p.MaxReceiveCount != 3 {
		t.Errorf("DLQ %+v, maxReceiveCount %d", p.DLQ, p.MaxReceiveCount)
	}
	if want := map[string]string{"VisibilityTimeout": "60", "RedrivePolicy": ""}; !reflect.DeepEqual(p.Queue.Attributes, want) {
		t.Errorf("queue attributes %v, want %v", p.Queue.Attributes, want)
	}
	if p.Bucket.SSEAlgorithm != "" || p.Bucket.PublicAccessBlock != nil {
		t.Errorf("bucket %+v, want no settings", p.Bucket)
	}
}

func TestNewPlanErrors(t *testing.T) {
	for name, edit := range map[string][2]string{
		"unhandled table property": {"BillingMode: PAY_PER_REQUEST", "BillingMode: PAY_PER_REQUEST\n      StreamSpecification: {StreamViewType: NEW_IMAGE}"},
		"DLQ not a GetAtt":         {"deadLetterTargetArn: !GetAtt Dead.Arn", "deadLetterTargetArn: arn:aws:sqs:x"},
		"no maxReceiveCount":       {`maxReceiveCount: "3"`, ""},
		"missing bucket":           {"StreamsBucket:", "OtherBucket:"},
		"wrong type":               {"Dead:\n    Type: AWS::SQS::Queue", "Dead:\n    Type: AWS::SNS::Topic"},
	} {
		src := strings.Replace(small, edit[0], edit[1], 1)
		if src == small {
			t.Fatalf("%s: edit did not apply", name)
		}
		if _, err := NewPlan([]byte(src), DefaultNames()); err == nil {
			t.Errorf("%s: NewPlan succeeded", name)
		}
	}
}

func TestTableDiff(t *testing.T) {
	p, err := NewPlan([]byte(small), DefaultNames())
	if err != nil {
		t.Fatal(err)
	}
	same := &ddbtypes.TableDescription{
		KeySchema:            p.Table.KeySchema,
		AttributeDefinitions: p.Table.AttributeDefinitions,
	}
	if d := TableDiff(p.Table, same); d != "" {
		t.Errorf("TableDiff of equal tables = %q", d)
	}
	other := &ddbtypes.TableDescription{
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		GlobalSecondaryIndexes: []ddbtypes.GlobalSecondaryIndexDescription{{
			IndexName: aws.String("g"),
			KeySchema: []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
		}},
	}
	d := TableDiff(p.Table, other)
	for _, want := range []string{"key schema", "attributes", "global secondary indexes"} {
		if !strings.Contains(d, want) {
			t.Errorf("TableDiff = %q, want it to mention %s", d, want)
		}
	}
}

// TestProvisionIdempotent provisions the small template twice under names of
// its own, then refuses a template whose table differs from the one created.
func TestProvisionIdempotent(t *testing.T) {
	e := emulator.Start()
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := Names{Table: "provision-test", Bucket: "provision-test", Queue: "provision-test"}
	var first Resources
	for i := range 2 {
		res, err := Provision(ctx, e.Clients, []byte(small), n)
		if err != nil {
			t.Fatalf("Provision #%d: %v", i+1, err)
		}
		if i == 0 {
			first = res
		} else if res != first {
			t.Errorf("second Provision = %+v, first %+v", res, first)
		}
	}
	if _, err := e.Clients.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(n.Table)}); err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(small, "{AttributeName: id, KeyType: HASH}", "{AttributeName: id, KeyType: HASH}\n        - {AttributeName: id2, KeyType: RANGE}", 1)
	changed = strings.Replace(changed, "- {AttributeName: id, AttributeType: S}", "- {AttributeName: id, AttributeType: S}\n        - {AttributeName: id2, AttributeType: N}", 1)
	if _, err := Provision(ctx, e.Clients, []byte(changed), n); !errors.Is(err, ErrMismatch) {
		t.Errorf("Provision with a different key schema: err = %v, want ErrMismatch", err)
	}
}
