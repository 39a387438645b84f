package baton_test

import (
	"strings"
	"testing"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/model"
)

// The Go agent carries its price table and spend caps into the turn, and
// refuses negative ones naming the field.
func TestAgentSpendAndPrice(t *testing.T) {
	m, err := model.ParseScript([]byte(`{"steps":[{"text":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	price := &baton.Price{InputPerMTok: 3, OutputPerMTok: 15}
	spend := baton.Spend{Turn: baton.Caps{InputTokens: 100}, Session: baton.Caps{Cost: 1}, Fail: true}
	a, err := app.GoAgent(baton.Agent{Name: "a", Model: m, Price: price, Limits: baton.Limits{Spend: spend}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Price != price || a.Limits.Spend != spend {
		t.Fatalf("agent price %+v spend %+v", a.Price, a.Limits.Spend)
	}
	for field, bad := range map[string]baton.Agent{
		"limits.spend.turn.inputTokens": {Name: "a", Model: m, Limits: baton.Limits{Spend: baton.Spend{Turn: baton.Caps{InputTokens: -1}}}},
		"limits.spend.session.cost":     {Name: "a", Model: m, Limits: baton.Limits{Spend: baton.Spend{Session: baton.Caps{Cost: -1}}}},
		"price":                         {Name: "a", Model: m, Price: &baton.Price{OutputPerMTok: -1}},
	} {
		if _, err := app.GoAgent(bad, nil); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: err = %v, want one naming the field", field, err)
		}
	}
}

// The Go agent carries its compaction policy into the turn, and refuses a
// policy without a budget.
func TestAgentCompaction(t *testing.T) {
	m, err := model.ParseScript([]byte(`{"steps":[{"text":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	c := &baton.Compaction{InputTokens: 100000, KeepTurns: 3}
	a, err := app.GoAgent(baton.Agent{Name: "a", Model: m, Compaction: c}, nil)
	if err != nil || a.Compaction != c {
		t.Fatalf("agent compaction %+v, %v", a.Compaction, err)
	}
	for field, bad := range map[string]*baton.Compaction{
		"compaction.InputTokens": {KeepTurns: 2},
		"compaction.MaxTokens":   {InputTokens: 9, MaxTokens: -1},
		"compaction.Price":       {InputTokens: 9, Price: &baton.Price{InputPerMTok: -1}},
	} {
		if _, err := app.GoAgent(baton.Agent{Name: "a", Model: m, Compaction: bad}, nil); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: err = %v, want one naming the field", field, err)
		}
	}
}
