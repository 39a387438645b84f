package test

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestFunctionsLinkNoTestingPackages checks that the deployed binaries do not
// link the standard library's testing packages (testing, testing/fstest, ...)
// nor baton's own test support (internal/testenv, internal/teststack,
// internal/testdev, batontest): test support stays out of production code.
func TestFunctionsLinkNoTestingPackages(t *testing.T) {
	t.Parallel()
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
// model link no model provider SDK, no MCP client and no Lambda client:
// only the resume function registers providers (providers.All()), the MCP
// client (providers.MCP()) and the invoker of lambda tools
// (providers.Lambda()), so only it pays for them. The operator links the
// MCP SDK for its endpoint alone (providers/mcpserve, the agents at
// /mcp); the tick links no MCP SDK at all.
func TestOperatorAndTickLinkNoProvider(t *testing.T) {
	t.Parallel()
	heavy := []string{
		"github.com/baton-run/baton/providers",
		"github.com/baton-run/baton/internal/provider/",
		"github.com/anthropics/anthropic-sdk-go",
		"github.com/openai/openai-go",
		"github.com/aws/aws-sdk-go-v2/service/bedrockruntime",
		"github.com/baton-run/baton/internal/mcp/mcpsdk",
		"github.com/modelcontextprotocol/go-sdk",
		"github.com/yosida95/uritemplate",
		// The model key store (providers.KeyStore()).
		"github.com/baton-run/baton/internal/apikey/awsstore",
		"github.com/aws/aws-sdk-go-v2/service/secretsmanager",
		"github.com/aws/aws-sdk-go-v2/service/ssm",
		"github.com/aws/aws-sdk-go-v2/service/lambda",
		"github.com/baton-run/baton/providers/awslambda",
		"github.com/santhosh-tekuri/jsonschema",
		"golang.org/x/text",
	}
	// What the operator's MCP endpoint links (internal/mcpserve/sdkserve).
	serving := []string{"github.com/baton-run/baton/providers/mcpserve", "github.com/modelcontextprotocol/go-sdk", "github.com/yosida95/uritemplate"}
	for _, fn := range []string{"operator", "tick"} {
		out, err := exec.Command("go", "list", "-deps", "../functions/"+fn).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps ../functions/%s: %v\n%s", fn, err, out)
		}
		for _, p := range strings.Fields(string(out)) {
			for _, h := range heavy {
				if fn == "operator" && slices.ContainsFunc(serving, func(x string) bool { return strings.HasPrefix(p, x) }) {
					continue
				}
				if p == h || strings.HasPrefix(p, h) {
					t.Errorf("the %s function links %s", fn, p)
				}
			}
		}
	}
}

// TestProviderPackagesLinkOnlyTheirSDK checks that a program registering
// one provider (or the MCP client) from its own package links no other
// provider SDK and no MCP SDK: importing package providers would link them
// all, each one's init and types included.
func TestProviderPackagesLinkOnlyTheirSDK(t *testing.T) {
	t.Parallel()
	sdks := map[string]string{
		"anthropic": "github.com/anthropics/anthropic-sdk-go",
		"openai":    "github.com/openai/openai-go",
		"bedrock":   "github.com/aws/aws-sdk-go-v2/service/bedrockruntime",
		"mcp":       "github.com/modelcontextprotocol/go-sdk",
		"awslambda": "github.com/aws/aws-sdk-go-v2/service/lambda",
	}
	for pkg, own := range sdks {
		out, err := exec.Command("go", "list", "-deps", "../providers/"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps ../providers/%s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		linked := func(prefix string) bool {
			for _, p := range deps {
				if strings.HasPrefix(p, prefix) {
					return true
				}
			}
			return false
		}
		if !linked(own) {
			t.Errorf("providers/%s does not link its own SDK %s", pkg, own)
		}
		for other, sdk := range sdks {
			if other != pkg && linked(sdk) {
				t.Errorf("providers/%s links %s", pkg, sdk)
			}
		}
		if !slicesHasOnly(deps, "github.com/baton-run/baton/providers/"+pkg) {
			t.Errorf("providers/%s links another providers package", pkg)
		}
	}
}

// slicesHasOnly reports whether the only baton/providers package in deps
// is want.
func slicesHasOnly(deps []string, want string) bool {
	for _, p := range deps {
		if strings.HasPrefix(p, "github.com/baton-run/baton/providers") && p != want {
			return false
		}
	}
	return true
}

// TestFunctionsLinkNoConfigChain checks that no bootstrap links the AWS
// SDK's shared-config and credential chain (profiles, SSO, STS, instance
// metadata): host.New reads a Lambda function's environment
// (awsenv.FromEnv); package awsenv/awsconfig, which has the chain, is the
// CLI's.
func TestFunctionsLinkNoConfigChain(t *testing.T) {
	t.Parallel()
	chain := []string{
		"github.com/aws/aws-sdk-go-v2/config",
		"github.com/aws/aws-sdk-go-v2/service/sts",
		"github.com/aws/aws-sdk-go-v2/service/sso",
		"github.com/aws/aws-sdk-go-v2/feature/ec2/imds",
		"github.com/baton-run/baton/internal/awsenv/awsconfig",
	}
	for _, fn := range functionRoles {
		out, err := exec.Command("go", "list", "-deps", "../functions/"+fn).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps ../functions/%s: %v\n%s", fn, err, out)
		}
		for _, p := range strings.Fields(string(out)) {
			for _, c := range chain {
				if p == c || strings.HasPrefix(p, c+"/") {
					t.Errorf("the %s function links %s", fn, p)
				}
			}
		}
	}
}

// TestOnlyTheOperatorLinksItsAPI checks, in the built bootstraps, that a
// function links only the handler of the host.Function its main names:
// the web console's page and the JWT verifier are in the operator's
// binary and in neither the resume function's nor the tick's (they were
// while host.Main chose the handler at run time: 1.4 MB of the tick).
func TestOnlyTheOperatorLinksItsAPI(t *testing.T) {
	t.Parallel()
	marks := []string{"<title>baton console", "auth: an issuer and an audience are required"}
	for _, r := range functionRoles {
		bin, err := os.ReadFile(bootstrap(t, r))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range marks {
			if has := bytes.Contains(bin, []byte(m)); has != (r == "operator") {
				t.Errorf("the %s bootstrap holds %q: %v, want %v", r, m, has, r == "operator")
			}
		}
	}
}

// TestAuthoringLinksNoRuntime checks that the authoring package (the root
// package baton: agents, tools, rules, models, messages, claims) links no
// AWS SDK, no Lambda runtime and no OIDC or JWT package: a program that
// only defines and tests a tool pays for none of them. Package host links
// them; the authoring package must not import it, nor the engine.
func TestAuthoringLinksNoRuntime(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "github.com/baton-run/baton").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps github.com/baton-run/baton: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/baton-run/baton") {
		t.Fatalf("go list -deps listed no authoring package:\n%s", out)
	}
	forbidden := []string{
		"github.com/aws/",
		"github.com/coreos/go-oidc",
		"github.com/go-jose/",
		"github.com/golang-jwt/",
		"golang.org/x/oauth2",
		"github.com/baton-run/baton/host",
		"github.com/baton-run/baton/internal/auth",
		"github.com/baton-run/baton/internal/app",
		"github.com/baton-run/baton/pkg/turn",
	}
	for _, p := range deps {
		for _, f := range forbidden {
			if p == f || strings.HasPrefix(p, f) {
				t.Errorf("the authoring package links %s", p)
			}
		}
	}
	t.Logf("the authoring package links %d packages", len(deps))
}
