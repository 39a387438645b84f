package awslambda_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/internal/tool/remote"
	"github.com/baton-run/baton/providers/awslambda"
	"github.com/baton-run/baton/test/harness"
)

var schemaAny = json.RawMessage(`{"type":"object"}`)

func call(input string) tool.Call {
	return tool.Call{ID: "call_1", Name: "remote", Input: json.RawMessage(input), IdempotencyKey: "sess/turn/call_1"}
}

// TestLambdaTool runs remote.LambdaTool on this package's invoker against kumo. kumo stores functions but
// does not execute them, so the test starts testdata/echofn as a real
// bootstrap polling kumo's Runtime API (test/harness).
func TestLambdaTool(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a Lambda bootstrap")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// kumo's services keep their state per process, not per server, so
	// names must not repeat across runs of this test (-count).
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	emu := testenv.Emulator()
	// No retries: kumo's 502 for a function nobody runs must come back as is.
	sdk := harness.LambdaClient(emu.URL)
	client := awslambda.Client{Client: sdk}

	t.Run("kumo errors", func(t *testing.T) {
		missing := "arn:aws:lambda:us-east-1:000000000000:function:nobody"
		_, err := remote.LambdaTool("remote", "", schemaAny, tool.Read, true, missing, time.Second, client).Run(ctx, call(`{}`))
		var nf *lambdatypes.ResourceNotFoundException
		if !errors.As(err, &nf) || !strings.Contains(err.Error(), "tool remote") {
			t.Fatalf("err = %v, want ResourceNotFoundException from the tool", err)
		}

		// Registered but not running: kumo has nothing to execute.
		created, err := sdk.CreateFunction(ctx, &lambda.CreateFunctionInput{
			FunctionName: aws.String("idle-" + suffix),
			Role:         aws.String(harness.Role),
			Runtime:      lambdatypes.RuntimeProvidedal2023,
			Handler:      aws.String("bootstrap"),
			Code:         &lambdatypes.FunctionCode{ZipFile: []byte("PK\x05\x06" + strings.Repeat("\x00", 18))},
		})
		if err != nil {
			t.Fatal(err)
		}
		_, err = remote.LambdaTool("remote", "", schemaAny, tool.Read, true, aws.ToString(created.FunctionArn), time.Second, client).Run(ctx, call(`{}`))
		if err == nil || !strings.Contains(err.Error(), "no runtime handler") {
			t.Fatalf("err = %v, want kumo's no-handler error", err)
		}
	})

	bin, err := harness.BuildBootstrap(ctx, "./providers/awslambda/testdata/echofn", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fn, err := harness.StartFunction(ctx, emu.URL, "echofn-"+suffix, bin, nil, harness.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fn.Stop() })
	// The harness's Invoke waits out kumo's registration of the poller.
	if _, err := fn.Invoke(ctx, []byte(`{"input":{}}`)); err != nil {
		t.Fatal(err)
	}
	lt := func(timeout time.Duration) tool.Tool {
		return remote.LambdaTool("remote", "A Lambda tool.", schemaAny, tool.Write, false, fn.ARN, timeout, client)
	}

	t.Run("success", func(t *testing.T) {
		tl := lt(5 * time.Second)
		if tl.Name != "remote" || tl.Effect != tool.Write || tl.Idempotent {
			t.Errorf("tool metadata = %+v", tl)
		}
		c := call(`{"city":"Lisbon"}`)
		out, err := tl.Run(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		var got remote.Envelope
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("output %s: %v", out, err)
		}
		if string(got.Input) != `{"city":"Lisbon"}` || got.ToolCallID != c.ID || got.IdempotencyKey != c.IdempotencyKey {
			t.Errorf("the function saw %+v", got)
		}
	})

	t.Run("function error", func(t *testing.T) {
		_, err := lt(5*time.Second).Run(ctx, call(`{"fail":"card declined"}`))
		var fe *remote.FunctionError
		if !errors.As(err, &fe) {
			t.Fatalf("err = %v, want *FunctionError", err)
		}
		if fe.Kind != "Unhandled" || fe.Message != "card declined" || fe.Tool != "remote" {
			t.Errorf("got %+v", fe)
		}
		if !strings.Contains(err.Error(), "card declined") {
			t.Errorf("message = %q", err)
		}
	})

	t.Run("non-JSON payload", func(t *testing.T) {
		_, err := lt(5*time.Second).Run(ctx, call(`{"raw":"<html>oops</html>"}`))
		if err == nil || !strings.Contains(err.Error(), "non-JSON payload") || !strings.Contains(err.Error(), "<html>oops") {
			t.Fatalf("err = %v, want a non-JSON payload error", err)
		}
	})

	// Last: the function is still sleeping when the tool gives up.
	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		_, err := lt(300*time.Millisecond).Run(ctx, call(`{"sleep_ms":2000}`))
		if err == nil || !strings.Contains(err.Error(), "no answer within 300ms") {
			t.Fatalf("err = %v, want a timeout", err)
		}
		if d := time.Since(start); d > 1500*time.Millisecond {
			t.Errorf("took %v", d)
		}
	})
}
