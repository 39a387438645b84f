package awslambda_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/baton-run/baton/pkg/turn"
	"github.com/baton-run/baton/providers/awslambda"
)

// InvokeVersion asks Lambda for an asynchronous invocation of the version
// (Qualifier, InvocationType Event); a version Lambda does not have is
// turn.ErrBuildGone, any other failure is not.
func TestInvokeVersion(t *testing.T) {
	t.Parallel()
	var got struct{ path, qualifier, kind, body string }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.path, got.qualifier, got.kind, got.body = r.URL.Path, r.URL.Query().Get("Qualifier"), r.Header.Get("X-Amz-Invocation-Type"), string(b)
		switch got.qualifier {
		case "7":
			w.WriteHeader(http.StatusAccepted)
		case "8":
			w.Header().Set("X-Amzn-Errortype", "ResourceNotFoundException")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"Type":"User","message":"Function not found"}`))
		default:
			w.Header().Set("X-Amzn-Errortype", "AccessDeniedException")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"message":"denied"}`))
		}
	}))
	t.Cleanup(srv.Close)
	c := awslambda.Client{Client: lambda.NewFromConfig(aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), RetryMaxAttempts: 1})}
	ctx := context.Background()
	if err := c.InvokeVersion(ctx, "stack-resume", "7", []byte(`{"Records":[]}`)); err != nil {
		t.Fatal(err)
	}
	if got.path != "/2015-03-31/functions/stack-resume/invocations" || got.kind != "Event" || got.body != `{"Records":[]}` {
		t.Fatalf("request %+v, want an Event invocation of stack-resume:7", got)
	}
	if err := c.InvokeVersion(ctx, "stack-resume", "8", nil); !errors.Is(err, turn.ErrBuildGone) {
		t.Fatalf("a missing version: %v, want turn.ErrBuildGone", err)
	}
	if err := c.InvokeVersion(ctx, "stack-resume", "9", nil); err == nil || errors.Is(err, turn.ErrBuildGone) {
		t.Fatalf("access denied: %v, want an error that is not ErrBuildGone", err)
	}
}
