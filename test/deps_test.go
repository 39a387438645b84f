package test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestFunctionsLinkNoTestingPackages checks that the deployed binaries do not
// link the standard library's testing packages (testing, testing/fstest, ...)
// nor baton's own test support (internal/testenv, internal/teststack,
// internal/testdev, batontest): test support stays out of production code.
func TestFunctionsLinkNoTestingPackages(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../functions/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps ../functions/...: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps ../functions/... listed nothing")
	}
	for _, p := range deps {
		if p == "testing" || strings.HasPrefix(p, "testing/") ||
			strings.HasPrefix(p, "github.com/baton-run/baton/internal/test") ||
			p == "github.com/baton-run/baton/batontest" {
			t.Errorf("a function links %s", p)
		}
	}
}
