package parts_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestModelSeamHasNoS3 checks that the model seam and the providers, which
// speak parts, do not pull in the S3 client.
func TestModelSeamHasNoS3(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../model/...", "../provider/...", "../conversation", ".").CombinedOutput()
	if err != nil {
		t.Skipf("go list: %v: %s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "aws-sdk-go-v2/service/s3") || strings.HasSuffix(dep, "baton/pkg/streams") {
			t.Errorf("the model seam depends on %s", dep)
		}
	}
}
