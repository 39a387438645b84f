package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/claims"
)

// An agent file's tool declares its claims: namespace, the input field
// keying it, and the access. The built tool computes them from the input,
// refusing a key that is not canonical; a read tool, an unknown field or a
// bad access is a config error.
func TestDeclaredClaims(t *testing.T) {
	schema := `"schema":{"type":"object","properties":{"order":{"type":"string"},"n":{"type":"integer"}},"required":["order"]}`
	cfg := decl(`"name":"refund","effect":"write",` + schema + `,"claims":[{"namespace":"orders","instance":"shop","field":"order","access":"write"}]`)
	a := load(t, cfg, agents.DeclaredTools(nil, nil))
	refund := a.get(t, "refund")
	if refund.Claims == nil {
		t.Fatal("the declared claims were not attached")
	}
	cs, err := refund.Claims(json.RawMessage(`{"order":"o-1"}`))
	if err != nil || len(cs) != 1 || cs[0] != (claims.Claim{Namespace: "orders", Instance: "shop", Key: "o-1", Access: claims.Write}) {
		t.Fatalf("claims = %+v, %v", cs, err)
	}
	if _, err := refund.Claims(json.RawMessage(`{"order":"o-1/"}`)); !errors.Is(err, claims.ErrInvalid) {
		t.Fatalf("a trailing slash: %v, want ErrInvalid", err)
	}

	for name, members := range map[string]string{
		"read tool":     `"name":"refund","effect":"read",` + schema + `,"claims":[{"namespace":"orders","field":"order","access":"write"}]`,
		"unknown field": `"name":"refund","effect":"write",` + schema + `,"claims":[{"namespace":"orders","field":"nope","access":"write"}]`,
		"not a string":  `"name":"refund","effect":"write",` + schema + `,"claims":[{"namespace":"orders","field":"n","access":"write"}]`,
		"bad access":    `"name":"refund","effect":"write",` + schema + `,"claims":[{"namespace":"orders","field":"order","access":"own"}]`,
	} {
		t.Run(name, func(t *testing.T) {
			d := deps(t)
			d.Declared = agents.DeclaredTools(nil, nil)
			fsys := fstest.MapFS{"agents.json": &fstest.MapFile{Data: []byte(decl(members))}}
			_, err := agents.Load(context.Background(), fsys, "agents.json", d)
			var ce *agents.ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), "claims") {
				t.Fatalf("err = %v, want a config error about claims", err)
			}
		})
	}
}
