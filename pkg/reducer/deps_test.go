package reducer_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestReducerLinksNoAWSSDK checks that the reducer, which folds facts in
// memory, and package claims, whose types and admission rules it uses,
// link no AWS SDK package: the claims broker on DynamoDB lives in package
// dynamo, so a program that only folds facts does not pay for the SDK.
func TestReducerLinksNoAWSSDK(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".", "../../internal/claims").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps . ../../internal/claims: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	for _, p := range deps {
		if strings.HasPrefix(p, "github.com/aws/") {
			t.Errorf("the reducer links %s", p)
		}
	}
}
