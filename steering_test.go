package baton_test

import (
	"context"
	"errors"
	"testing"

	"github.com/baton-run/baton"
)

func TestAgentSteering(t *testing.T) {
	m, _ := baton.Script([]byte(`{"steps":[{"text":"hi"}]}`))
	a, err := baton.Agent{Name: "a", Model: m, Steering: baton.SteerInterrupt}.Build(context.Background())
	if err != nil || a.Steering != baton.SteerInterrupt {
		t.Fatalf("Build = %+v, %v; want steering interrupt", a, err)
	}
	_, err = baton.Agent{Name: "a", Model: m, Steering: "shout"}.Build(context.Background())
	var ae *baton.AgentError
	if !errors.As(err, &ae) || ae.Field != "steering" {
		t.Fatalf("Build with an unknown steering = %v, want an AgentError on steering", err)
	}
}
