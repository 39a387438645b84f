package test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestConsoleThroughAPIGateway: through API Gateway and the operator
// bootstrap, the web console's assets are served without a token (their
// routes have no authorizer), while the JSON API the page calls still wants
// the JWT.
func TestConsoleThroughAPIGateway(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackConfig{})
	noRedirect := &http.Client{Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) (*http.Response, string) {
		t.Helper()
		req, err := s.api.NewRequest(s.ctx, "GET", path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return resp, string(b)
	}
	if resp, _ := get("/console"); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "console/index.html" {
		t.Errorf("GET /console: %d Location %q, want 301 to console/index.html", resp.StatusCode, resp.Header.Get("Location"))
	}
	for path, want := range map[string]string{
		"/console/index.html": "<title>baton console</title>",
		"/console/app.js":     "import { call, stream",
		"/console/style.css":  ":root {",
	} {
		resp, body := get(path)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s without a token: %d %q…, want 200 with %q", path, resp.StatusCode, clipBody(body), want)
		}
	}
	if got := s.do("GET", "/sessions", "", "", nil); got.code != http.StatusUnauthorized {
		t.Errorf("GET /sessions without a token: %v, want 401", got)
	}
}

func clipBody(s string) string {
	if len(s) > 80 {
		return s[:80]
	}
	return s
}
