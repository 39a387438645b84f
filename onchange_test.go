package baton_test

import (
	"errors"
	"testing"

	"github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/app"
)

// A Go agent's OnChange is its turns' policy; an unknown one is refused.
func TestAgentOnChange(t *testing.T) {
	t.Parallel()
	m, _ := baton.Script([]byte(`{"steps":[{"text":"hi"}]}`))
	a, err := app.GoAgent(baton.Agent{Name: "a", Model: m, OnChange: baton.OnChangePin}, nil)
	if err != nil || a.OnChange != baton.OnChangePin {
		t.Fatalf("GoAgent = %+v, %v; want onChange pin", a, err)
	}
	_, err = app.GoAgent(baton.Agent{Name: "a", Model: m, OnChange: "sometimes"}, nil)
	var ae *baton.AgentError
	if !errors.As(err, &ae) || ae.Field != "onChange" {
		t.Fatalf("GoAgent with an unknown onChange = %v, want an AgentError on onChange", err)
	}
}
