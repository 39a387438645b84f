package httpjson_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestHTTPJSONKnowsNoSessions checks that httpjson stays generic: it links
// none of baton's session, store or domain packages (their errors are
// answered by internal/sessionhttp) and no AWS SDK.
func TestHTTPJSONKnowsNoSessions(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	for _, p := range deps {
		for _, h := range []string{"github.com/baton-run/baton/internal/session", "github.com/baton-run/baton/internal/dynamo",
			"github.com/baton-run/baton/internal/awsenv", "github.com/baton-run/baton/pkg/", "github.com/aws/"} {
			if p == h || strings.HasPrefix(p, h) {
				t.Errorf("httpjson links %s", p)
			}
		}
	}
}
