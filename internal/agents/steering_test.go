package agents_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/pkg/reducer"
)

func TestSteeringConfig(t *testing.T) {
	for _, p := range []reducer.Steering{reducer.SteerEnqueue, reducer.SteerSteer, reducer.SteerInterrupt, reducer.SteerReject} {
		m, err := loadSpend(t, scripted(`"steering":"`+string(p)+`"`))
		if err != nil {
			t.Fatal(err)
		}
		if a, _ := m.Agent("a"); a.Steering != p || m.Steering("a") != p {
			t.Errorf("steering %q loaded as %q", p, a.Steering)
		}
	}
	m, err := loadSpend(t, scripted(""))
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := m.Agent("a"); a.Steering != "" {
		t.Errorf("default steering %q, want empty (enqueue)", a.Steering)
	}
}

func TestBadSteeringConfig(t *testing.T) {
	_, err := loadSpend(t, scripted(`"steering":"shout"`))
	var ce *agents.ConfigError
	if !errors.As(err, &ce) || ce.Field != "steering" || !strings.Contains(err.Error(), `"shout": want enqueue, steer, interrupt or reject`) {
		t.Fatalf("err = %v, want a ConfigError on steering", err)
	}
}
