package cli_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCLILinksNoStorageSDK checks that the CLI, a client of the operator
// API, links neither the session store nor the DynamoDB, S3 or SQS SDK:
// it reaches sessions through package api alone.
func TestCLILinksNoStorageSDK(t *testing.T) {
	t.Parallel()
	heavy := []string{
		"github.com/aws/aws-sdk-go-v2/service/dynamodb",
		"github.com/aws/aws-sdk-go-v2/service/s3",
		"github.com/aws/aws-sdk-go-v2/service/sqs",
		"github.com/baton-run/baton/internal/session",
		"github.com/baton-run/baton/internal/dynamo",
		"github.com/baton-run/baton/internal/operator",
		"github.com/baton-run/baton/pkg/streams",
	}
	for _, pkg := range []string{".", "../../api"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) == 0 {
			t.Fatalf("go list -deps %s listed nothing", pkg)
		}
		for _, p := range deps {
			for _, h := range heavy {
				if p == h || strings.HasPrefix(p, h+"/") {
					t.Errorf("%s links %s", pkg, p)
				}
			}
		}
	}
}
