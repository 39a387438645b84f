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
		done <- dev.Run(ctx, baton.Config{Agents: []baton.Agent{{Name: "mine", Model: m}}},
			dev.Options{Addr: "127.0.0.1:0", Out: &out, Ready: func(u string) { ready <- u },
				Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	var base string
	select {
	case base = <-ready:
	case err := <-done:
		t.Fatalf("dev server stopped: %v", err)
	}
	if !strings.Contains(out.String(), "agents        mine\n") {
		t.Fatalf("how-to:\n%s", out.String())
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
