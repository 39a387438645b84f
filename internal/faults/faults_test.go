package faults_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/faults"
	"github.com/baton-run/baton/internal/ids"
)

// TestFaultsAsTheSDKSeesThem sends one attempt per fault through the
// transport and checks the SDK decodes it as the AWS error it imitates,
// that awsenv.Transient says so, and that only a lost response reaches the
// store.
func TestFaultsAsTheSDKSeesThem(t *testing.T) {
	ctx := t.Context()
	table := ids.New("plain")
	if _, err := emu.Clients.DynamoDB.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(table), BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("k"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("k"), KeyType: ddbtypes.KeyTypeHash}},
	}); err != nil {
		t.Fatal(err)
	}
	once := func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }
	once3 := func(o *s3.Options) { o.RetryMaxAttempts = 1 }
	exists := func(key string) bool {
		out, err := emu.Clients.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table),
			Key: map[string]ddbtypes.AttributeValue{"k": &ddbtypes.AttributeValueMemberS{Value: key}}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Item) > 0
	}
	for _, c := range []struct {
		fault  faults.Kind
		code   string // the API error code, "" for a transport error
		status int
		landed bool
	}{
		{faults.Throughput, "ProvisionedThroughputExceededException", 400, false},
		{faults.Throttling, "ThrottlingException", 400, false},
		{faults.SlowDown, "ServiceUnavailable", 503, false},
		{faults.ServerError, "InternalServerError", 500, false},
		{faults.Timeout, "", 0, false},
		{faults.LostResponse, "", 0, true},
	} {
		t.Run("dynamodb "+string(c.fault), func(t *testing.T) {
			ft := faults.New(nil, faults.Rule{Op: "dynamodb:PutItem", Fault: c.fault})
			cl := faults.Clients(emu.URL, ft)
			key := ids.New("k")
			_, err := cl.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table),
				Item: map[string]ddbtypes.AttributeValue{"k": &ddbtypes.AttributeValueMemberS{Value: key}}}, once)
			checkFault(t, err, c.code, c.status)
			if got := exists(key); got != c.landed {
				t.Fatalf("item written: %v, want %v", got, c.landed)
			}
			if c.fault == faults.Throughput {
				var pte *ddbtypes.ProvisionedThroughputExceededException
				if !errors.As(err, &pte) {
					t.Errorf("%v is not a ProvisionedThroughputExceededException", err)
				}
			}
		})
	}
	for _, c := range []struct {
		fault  faults.Kind
		code   string
		status int
	}{
		{faults.SlowDown, "SlowDown", 503},
		{faults.Throttling, "SlowDown", 503},
		{faults.ServerError, "InternalError", 500},
		{faults.Timeout, "", 0},
		{faults.LostResponse, "", 0},
	} {
		t.Run("s3 "+string(c.fault), func(t *testing.T) {
			ft := faults.New(nil, faults.Rule{Op: "s3:PutObject", Fault: c.fault})
			cl := faults.Clients(emu.URL, ft)
			_, err := cl.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(shared.Bucket), Key: aws.String(ids.New("o")),
				Body: strings.NewReader("x")}, once3)
			checkFault(t, err, c.code, c.status)
		})
	}
}

func checkFault(t *testing.T, err error, code string, status int) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	if !awsenv.Transient(err) {
		t.Errorf("awsenv.Transient(%v) = false", err)
	}
	var api smithy.APIError
	switch {
	case code == "" && errors.As(err, &api):
		t.Errorf("%v: an API error, want a transport error", err)
	case code != "" && (!errors.As(err, &api) || api.ErrorCode() != code):
		t.Errorf("%v: want API error %s", err, code)
	}
	var re *awshttp.ResponseError
	if status != 0 && (!errors.As(err, &re) || re.HTTPStatusCode() != status) {
		t.Errorf("%v: want HTTP status %d", err, status)
	}
}

// TestRulesCountMatchingRequests: After lets requests through first, Times
// bounds the faults, and requests a rule does not match pass untouched.
func TestRulesCountMatchingRequests(t *testing.T) {
	ft := faults.New(nil, faults.Rule{Op: "s3:", Path: "/hit/", After: 1, Times: 2, Fault: faults.ServerError})
	cl := faults.Clients(emu.URL, ft)
	put := func(key string) error {
		_, err := cl.S3.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(shared.Bucket), Key: aws.String(key),
			Body: strings.NewReader("x")}, func(o *s3.Options) { o.RetryMaxAttempts = 1 })
		return err
	}
	var got []bool
	for _, key := range []string{"hit/1", "miss/1", "hit/2", "hit/3", "hit/4"} {
		got = append(got, put(key) == nil)
	}
	want := []bool{true, true, false, false, true}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("successes %v, want %v", got, want)
		}
	}
	if n := ft.Count("s3:PutObject"); n != 2 {
		t.Fatalf("%d faults counted, want 2", n)
	}
}

// TestTheSDKRetriesThrottles: with the standard retryer, two throttles
// cost two more attempts and the write succeeds.
func TestTheSDKRetriesThrottles(t *testing.T) {
	c := &awsenv.Counter{}
	ft := faults.New(c, faults.Rule{Op: "s3:PutObject", Times: 2, Fault: faults.SlowDown})
	cl := faults.Clients(emu.URL, ft)
	c.Next = http.DefaultTransport
	if _, err := cl.S3.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(shared.Bucket), Key: aws.String(ids.New("o")),
		Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	if n := ft.Count("s3:PutObject"); n != 2 {
		t.Fatalf("%d faults, want 2", n)
	}
	if n := c.Counts()["s3:PutObject"]; n != 1 {
		t.Fatalf("%d PUTs reached the emulator, want 1", n)
	}
	if awsenv.Transient(context.Canceled) || awsenv.Transient(&ddbtypes.ConditionalCheckFailedException{}) {
		t.Fatal("cancellation or a failed condition called transient")
	}
}
