package baton_test

import (
	"encoding/json"
	"errors"
	"testing"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/claims"
)

func TestToolClaims(t *testing.T) {
	static := baton.Func("pay", "Pay.", pay, baton.Claims(baton.ClaimDecl{Namespace: "accounts", Field: "to", Access: baton.AccessWrite}))
	typed := baton.Func("pay2", "Pay.", pay, baton.ClaimsOf(func(in transfer) ([]baton.Claim, error) {
		return []baton.Claim{{Namespace: "accounts", Key: "acct/" + in.To, Access: baton.AccessWrite}}, nil
	}))
	reg := build(t, static, typed)
	for name, want := range map[string]string{"pay": "alice", "pay2": "acct/alice"} {
		tl, _ := reg.Get(name)
		cs, err := tl.Claims(json.RawMessage(`{"to":"alice","amount":3}`))
		if err != nil || len(cs) != 1 || cs[0].Key != want {
			t.Fatalf("%s: claims %+v %v, want key %s", name, cs, err, want)
		}
		if _, err := tl.Claims(json.RawMessage(`{"to":"../bob","amount":3}`)); !errors.Is(err, claims.ErrInvalid) {
			t.Fatalf("%s: a non-canonical key: %v", name, err)
		}
	}
	bad := baton.Func("pay3", "Pay.", pay, baton.Claims(baton.ClaimDecl{Namespace: "accounts", Access: baton.AccessWrite}))
	if bad.Err == nil {
		t.Fatal("a claim naming no field was accepted")
	}
	read := baton.Func("peek", "Peek.", pay, baton.Read(), baton.Claims(baton.ClaimDecl{Namespace: "accounts", Field: "to", Access: baton.AccessRead}))
	m, err := baton.Script([]byte(`{"steps":[{"text":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	agent := baton.Agent{Name: "a", Model: m, Tools: []baton.Tool{read}}
	if _, err := app.GoAgent(agent, nil); err == nil {
		t.Fatal("a read tool with claims was accepted")
	}
}
