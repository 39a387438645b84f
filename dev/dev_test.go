package dev_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/dev"
	"github.com/baton-run/baton/host"
)

// TestRunServesTheProgramsAgents: the dev server of a program with its own
// agents serves those, and not the demo.
func TestRunServesTheProgramsAgents(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := baton.Script([]byte(`{"steps":[{"text":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	done := make(chan error, 1)
	var out bytes.Buffer
	go func() {
		done <- dev.Run(ctx, host.Config{Agents: []baton.Agent{{Name: "mine", Model: m}}},
			dev.Options{Addr: "127.0.0.1:0", Out: &out, Ready: func(u string) { ready <- u },
				Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	var base string
	select {
	case base = <-ready:
	case err := <-done:
		t.Fatalf("dev server stopped: %v", err)
	}
	// The how-to names the program's agent, says where the data is, and
	// suggests a message for this agent, not the demo's.
	for _, want := range []string{"agents        mine\n", `{"agent":"mine"}`, "data in memory", `{"text":"Hello"}`, `"decision":"deny"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("how-to has no %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "status update") || strings.Contains(out.String(), "data in \n") {
		t.Errorf("how-to suggests the demo's message or an empty data path:\n%s", out.String())
	}
	for agent, want := range map[string]int{"mine": http.StatusCreated, "demo": http.StatusUnprocessableEntity} {
		resp, err := http.Post(base+"/sessions", "application/json", strings.NewReader(`{"agent":"`+agent+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("create a %s session: %d, want %d", agent, resp.StatusCode, want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
