package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDevTracesTurns: `baton dev` with the standard OTLP variables set
// traces its turns as the resume function does: a turn of the demo agent
// sends its invoke_agent and chat spans to the OTLP/HTTP receiver.
func TestDevTracesTurns(t *testing.T) {
	var mu sync.Mutex
	var got [][]byte
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		if r.URL.Path != "/v1/traces" || err != nil {
			http.Error(w, "want a POST to /v1/traces", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer rcv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "baton-dev-test")
	t.Setenv("KUMO_DATA_DIR", t.TempDir()) // no re-exec: the emulator runs in this process
	t.Chdir(t.TempDir())

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"dev", "-addr", "127.0.0.1:0", "-tick", "1s"}, pw)
		pw.Close()
	}()
	var url string
	sc := bufio.NewScanner(pr)
	traced := false
	for url == "" && sc.Scan() {
		traced = traced || strings.HasPrefix(sc.Text(), "tracing turns over OTLP")
		if m := regexp.MustCompile(`operator API\s+(http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
	}
	go io.Copy(io.Discard, pr)
	if url == "" || !traced {
		cancel()
		t.Fatalf("dev printed no operator URL (%q) or no tracing line (%v): %v", url, traced, <-done)
	}

	post := func(path, body string) string {
		req, _ := http.NewRequestWithContext(ctx, "POST", url+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	id := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(post("/sessions", `{"agent":"demo"}`))
	if id == nil {
		t.Fatal("no session id")
	}
	post("/sessions/"+id[1]+"/messages", `{"text":"Status update, please."}`)

	want := [][]byte{[]byte("invoke_agent demo"), []byte("gen_ai.operation.name"), []byte("baton-dev-test"), []byte(id[1])}
	for {
		mu.Lock()
		all := bytes.Join(got, nil)
		mu.Unlock()
		missing := ""
		for _, w := range want {
			if !bytes.Contains(all, w) {
				missing = string(w)
			}
		}
		if missing == "" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the receiver got %d posts, none with %q", len(got), missing)
		case <-time.After(100 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("dev: %v", err)
	}
}

// TestDevReadsBatonAgents: `baton dev` serves the agent file that
// BATON_AGENTS names, as the functions do, and --agents overrides it.
func TestDevReadsBatonAgents(t *testing.T) {
	dir := t.TempDir()
	file := func(name, agent string) string {
		p := dir + "/" + name
		body := `{"agents":{"` + agent + `":{"provider":"scripted","script":{"steps":[{"text":"hi"}]},"system":"You greet."}}}`
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fromEnv, fromFlag := file("env.json", "fromenv"), file("flag.json", "fromflag")
	t.Setenv("BATON_AGENTS", fromEnv)
	t.Setenv("KUMO_DATA_DIR", t.TempDir()) // no re-exec: the emulator runs in this process
	t.Chdir(t.TempDir())
	for _, c := range []struct {
		args []string
		want string
	}{{nil, "fromenv"}, {[]string{"--agents", fromFlag}, "fromflag"}} {
		if got := devAgents(t, c.args...); got != c.want {
			t.Errorf("baton dev %q serves agents %q, want %q", c.args, got, c.want)
		}
	}
}

// devAgents starts baton dev with args and returns the agents its banner
// lists, then stops it.
func devAgents(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"dev", "-addr", "127.0.0.1:0", "-tick", "1s"}, args...), pw)
		pw.Close()
	}()
	agents := ""
	sc := bufio.NewScanner(pr)
	for agents == "" && sc.Scan() {
		if m := regexp.MustCompile(`^\s+agents\s+(\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			agents = m[1]
		}
	}
	go io.Copy(io.Discard, pr)
	cancel()
	if err := <-done; agents == "" {
		t.Fatalf("baton dev printed no agents line: %v", err)
	}
	return agents
}
