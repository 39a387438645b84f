package test

import (
	"fmt"
	"maps"
	"regexp"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/agents"
)

// resumeKeyEnv is what the resume function alone is told of model keys:
// the secret of each provider's key (agents.SecretEnv), from a parameter.
var resumeKeyEnv = map[string]string{
	agents.SecretEnv("anthropic"): "!Ref AnthropicKeySecret",
	agents.SecretEnv("openai"):    "!Ref OpenAIKeySecret",
}

// wildcards are ARNs an IAM Resource must never be allowed to be.
var wildcards = []string{
	"*",
	"arn:aws:secretsmanager:*:*:secret:*",
	"arn:aws:secretsmanager:us-east-1:123456789012:secret:*",
	"arn:aws:ssm:us-east-1:123456789012:parameter/*",
	"arn:aws:ssm:us-east-1:123456789012:*",
	"arn:aws:kms:us-east-1:123456789012:key/*",
	"arn:aws:kms:us-east-1:123456789012:alias/aws/ssm",
}

// withARNParameters returns resources plus the template's parameters
// whose AllowedPattern admits one ARN and no wildcard (nor a value that is
// not an ARN, besides empty), which scope an IAM statement as a resource
// of the stack does.
func withARNParameters(t *testing.T, tr map[string]any, resources map[string]any) map[string]any {
	t.Helper()
	out := maps.Clone(resources)
	params, _ := tr["Parameters"].(map[string]any)
	for name, p := range params {
		pat, _ := at(p, "AllowedPattern").(string)
		if pat == "" {
			continue
		}
		re, err := regexp.Compile(pat)
		if err != nil {
			t.Errorf("parameter %s: AllowedPattern: %v", name, err)
			continue
		}
		if armed(re) {
			out[name] = p
		}
	}
	return out
}

// armed reports whether re admits no wildcard and nothing but an ARN or
// the empty string.
func armed(re *regexp.Regexp) bool {
	for _, w := range append(wildcards, "secret-name", "ssm:/baton/key", " arn:aws:ssm:us-east-1:123456789012:parameter/k") {
		if re.MatchString(w) {
			return false
		}
	}
	return true
}

// TestModelKeyParameters checks the template's model key parameters: each
// admits an ARN of a secret or a parameter (and no wildcard), and the
// resume function's role alone may read exactly it, by the one action of
// its service, on a condition that tells the services apart by the ARN,
// and decrypt with the KMS key only through those services.
func TestModelKeyParameters(t *testing.T) {
	t.Parallel()
	tr := tree(t)
	for _, name := range []string{"AnthropicKeySecret", "OpenAIKeySecret", "ModelKeysKmsKeyArn"} {
		p := at(tr, "Parameters", name)
		if p == nil || at(p, "Default") != "" {
			t.Fatalf("parameter %s: %v, want one defaulting to empty", name, p)
		}
		re, err := regexp.Compile(fmt.Sprint(at(p, "AllowedPattern")))
		if err != nil || !armed(re) || !re.MatchString("") {
			t.Errorf("parameter %s: AllowedPattern %v admits a wildcard or a value that is not an ARN", name, at(p, "AllowedPattern"))
		}
	}
	re := regexp.MustCompile(fmt.Sprint(at(tr, "Parameters", "AnthropicKeySecret", "AllowedPattern")))
	for _, ok := range []string{
		"arn:aws:secretsmanager:eu-west-1:123456789012:secret:baton/anthropic-AbC123",
		"arn:aws:ssm:eu-west-1:123456789012:parameter/baton/anthropic",
	} {
		if !re.MatchString(ok) {
			t.Errorf("AnthropicKeySecret refuses %s", ok)
		}
	}

	// Which statements of which role grant what on a key parameter.
	type grant struct{ role, cond, action, resource string }
	var got []grant
	for id, r := range resourcesOfType(tr, "AWS::IAM::Role") {
		for _, p := range asList(at(r, "Properties", "Policies")) {
			for _, s := range asList(at(p, "PolicyDocument", "Statement")) {
				alts := asList(at(s, "Fn::If"))
				cond := ""
				if len(alts) == 3 {
					cond, s = fmt.Sprint(alts[0]), alts[1]
				}
				ref, _ := at(s, "Resource", "Ref").(string)
				if !strings.Contains(ref, "Key") {
					continue
				}
				for _, a := range asList(at(s, "Action")) {
					got = append(got, grant{id, cond, fmt.Sprint(a), ref})
				}
				if ref == "ModelKeysKmsKeyArn" && at(s, "Condition", "StringEquals", "kms:ViaService") == nil {
					t.Errorf("%s: kms:Decrypt without a kms:ViaService condition", id)
				}
			}
		}
	}
	want := []grant{
		{"ResumeRole", "AnthropicKeyInSecretsManager", "secretsmanager:GetSecretValue", "AnthropicKeySecret"},
		{"ResumeRole", "AnthropicKeyInSSM", "ssm:GetParameter", "AnthropicKeySecret"},
		{"ResumeRole", "OpenAIKeyInSecretsManager", "secretsmanager:GetSecretValue", "OpenAIKeySecret"},
		{"ResumeRole", "OpenAIKeyInSSM", "ssm:GetParameter", "OpenAIKeySecret"},
		{"ResumeRole", "ModelKeysKms", "kms:Decrypt", "ModelKeysKmsKeyArn"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("grants on the key parameters\n got %v\nwant %v", got, want)
	}
	// The conditions read the ARN's service, and an empty parameter is
	// neither.
	for cond, svc := range map[string]string{
		"AnthropicKeyInSSM": "ssm", "AnthropicKeyInSecretsManager": "secretsmanager",
		"OpenAIKeyInSSM": "ssm", "OpenAIKeyInSecretsManager": "secretsmanager",
	} {
		eq := asList(at(tr, "Conditions", cond, "Fn::Equals"))
		if len(eq) != 2 || eq[1] != svc || at(eq[0], "Fn::Select") == nil {
			t.Errorf("condition %s = %v, want the ARN's service equal to %s", cond, eq, svc)
		}
	}
}
