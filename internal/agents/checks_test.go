package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/agentspec"
	"github.com/baton-run/baton/internal/claims"
)

// loadErr loads config as agents.json and returns its first ConfigError,
// failing the test when there is none.
func loadErr(t *testing.T, config string) *agents.ConfigError {
	t.Helper()
	_, err := agents.Load(context.Background(), fstest.MapFS{"agents.json": &fstest.MapFile{Data: []byte(config)}}, "agents.json", deps(t))
	var ce *agents.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("load: %.300v, want a ConfigError", err)
	}
	return ce
}

// TestDuplicateMembersAreRefused: a member that appears twice in its object,
// at any depth, is refused naming its path, where encoding/json would have
// let the last win (a maxDepth of 2 then 1000000000 meant the second).
func TestDuplicateMembersAreRefused(t *testing.T) {
	for _, c := range []struct {
		name, config, agent, field string
	}{
		{"agent member", scripted(`"maxDepth":2,"maxDepth":1000000000`), "a", "maxDepth"},
		{"nested member", scripted(`"limits":{"budget":"10s","margin":"1s","budget":"1h"}`), "a", "limits.budget"},
		{"in an array", scripted(`"tools":[{"name":"x","name":"y"}]`), "a", "tools[0].name"},
		{"approval", scripted(`"approvals":{"send_email":"never","send_email":"always"}`), "a", "approvals.send_email"},
		{"agent twice", `{"agents":{"a":` + `{"provider":"scripted","script":` + inlineScript + `},"a":{"provider":"scripted","script":` + inlineScript + `}}}`, "a", ""},
		{"top level", `{"agents":{"a":{"provider":"scripted","script":` + inlineScript + `}},"agents":{}}`, "", "agents"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ce := loadErr(t, c.config)
			if ce.Agent != c.agent || ce.Field != c.field || !strings.Contains(ce.Err.Error(), "twice") {
				t.Fatalf("%v (agent %q field %q), want agent %q field %q refused as twice", ce, ce.Agent, ce.Field, c.agent, c.field)
			}
		})
	}
	// The same names in different objects are not duplicates.
	if _, err := loadSpend(t, scripted(`"limits":{"budget":"30s","spend":{"turn":{"cost":1},"session":{"cost":1}}}`)); err != nil {
		t.Fatalf("distinct objects: %v", err)
	}
}

// TestScriptedAgentRefusesProviderFields: an API key (apiKeySecret,
// apiKeyEnv), an endpoint or echoReasoning mean nothing to a scripted
// agent, which silently ignored them; each is refused naming the field.
func TestScriptedAgentRefusesProviderFields(t *testing.T) {
	for field, member := range map[string]string{
		"apiKeySecret":  `"apiKeySecret":"arn:aws:secretsmanager:us-east-1:123456789012:secret:k-AbC123"`,
		"apiKeyEnv":     `"apiKeyEnv":"FAKE_KEY"`,
		"baseURL":       `"baseURL":"https://api.example.com/v1"`,
		"echoReasoning": `"echoReasoning":true`,
	} {
		t.Run(field, func(t *testing.T) {
			if ce := loadErr(t, scripted(member)); ce.Agent != "a" || ce.Field != field || !strings.Contains(ce.Err.Error(), "scripted") {
				t.Fatalf("%v, want %s refused on a scripted agent", ce, field)
			}
		})
	}
	if _, err := loadSpend(t, scripted(`"model":"scripted-demo"`)); err != nil {
		t.Fatalf("a scripted agent's model names it in traces: %v", err)
	}
}

// TestSystemPromptIsBounded: a 20 MB system prompt is refused at load,
// naming the field and the bound; one at the bound loads.
func TestSystemPromptIsBounded(t *testing.T) {
	for _, n := range []int{20 << 20, agentspec.MaxSystem + 1} {
		ce := loadErr(t, scripted(`"system":"`+strings.Repeat("s", n)+`"`))
		if ce.Field != "system" || !strings.Contains(ce.Err.Error(), "262144") {
			t.Fatalf("%d bytes: %.200v, want system refused naming the bound", n, ce)
		}
	}
	if _, err := loadSpend(t, scripted(`"system":"`+strings.Repeat("s", agentspec.MaxSystem)+`"`)); err != nil {
		t.Fatalf("a prompt at the bound: %.200v", err)
	}
}

// TestClaimNamespacesAreBounded: a declared tool's claim namespace (or
// instance) of 3,000 bytes, whose DynamoDB key would pass the 2,048-byte
// partition-key limit, or one holding NUL or a newline, is refused at load.
func TestClaimNamespacesAreBounded(t *testing.T) {
	schema := `"schema":{"type":"object","properties":{"order":{"type":"string"}},"required":["order"]}`
	claim := func(namespace, instance string) string {
		b, err := json.Marshal([]claims.Static{{Namespace: namespace, Instance: instance, Field: "order", Access: claims.Write}})
		if err != nil {
			t.Fatal(err)
		}
		return decl(`"name":"refund","effect":"write",` + schema + `,"claims":` + string(b))
	}
	for _, c := range []struct{ name, namespace, instance, says string }{
		{"namespace of 3000 bytes", strings.Repeat("n", 3000), "", "namespace is 3000 bytes"},
		{"instance of 3000 bytes", "orders", strings.Repeat("i", 3000), "instance is 3000 bytes"},
		{"namespace with NUL", "orders\x00", "", "control character"},
		{"namespace with a newline", "orders\nrefunds", "", "control character"},
		{"instance with NUL", "orders", "shop\x00", "control character"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if ce := loadErr(t, claim(c.namespace, c.instance)); ce.Field != "tools[0]" || !strings.Contains(ce.Err.Error(), c.says) {
				t.Fatalf("%.300v, want tools[0] refused saying %q", ce, c.says)
			}
		})
	}
	if _, err := loadSpend(t, claim(strings.Repeat("n", claims.MaxNamespace), strings.Repeat("i", claims.MaxNamespace))); err != nil {
		t.Fatalf("a namespace and instance at the bound: %.300v", err)
	}
}
