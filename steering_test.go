package baton_test

import (
	"errors"
	"testing"

	"github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/app"
)

func TestAgentSteering(t *testing.T) {
	m, _ := baton.Script([]byte(`{"steps":[{"text":"hi"}]}`))
	a, err := app.GoAgent(baton.Agent{Name: "a", Model: m, Steering: baton.SteerInterrupt}, nil)
	if err != nil || a.Steering != baton.SteerInterrupt {
		t.Fatalf("Build = %+v, %v; want steering interrupt", a, err)
	}
	_, err = app.GoAgent(baton.Agent{Name: "a", Model: m, Steering: "shout"}, nil)
	var ae *baton.AgentError
	if !errors.As(err, &ae) || ae.Field != "steering" {
		t.Fatalf("Build with an unknown steering = %v, want an AgentError on steering", err)
	}
}
