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

// TestOperatorAndTickLinkNoProvider checks that the functions that run no
// model link no model provider SDK: only the resume function registers
// providers (providers.All()), so only it pays for them.
func TestOperatorAndTickLinkNoProvider(t *testing.T) {
	heavy := []string{
		"github.com/baton-run/baton/providers",
		"github.com/baton-run/baton/pkg/provider/",
		"github.com/anthropics/anthropic-sdk-go",
		"github.com/openai/openai-go",
		"github.com/aws/aws-sdk-go-v2/service/bedrockruntime",
	}
	for _, fn := range []string{"operator", "tick"} {
		out, err := exec.Command("go", "list", "-deps", "../functions/"+fn).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps ../functions/%s: %v\n%s", fn, err, out)
		}
		for _, p := range strings.Fields(string(out)) {
			for _, h := range heavy {
				if p == h || strings.HasPrefix(p, h) {
					t.Errorf("the %s function links %s", fn, p)
				}
			}
		}
	}
}
