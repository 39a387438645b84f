package console_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/console"
	"github.com/baton-run/baton/internal/operator"
)

// noIdentity is an operator API whose every caller is unauthenticated.
func noIdentity() http.Handler {
	return operator.New(operator.Config{Identity: func(*http.Request) (string, bool) { return "", false }})
}

func get(t *testing.T, h http.Handler, method, path string, hdr ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// TestConsoleServedWithoutIdentity: the operator API serves the console's
// assets to a caller with no identity, while its JSON API still answers 401.
func TestConsoleServedWithoutIdentity(t *testing.T) {
	t.Parallel()
	h := noIdentity()
	if r := get(t, h, "GET", "/sessions"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /sessions without identity: %d, want 401", r.StatusCode)
	}
	r := get(t, h, "GET", "/console")
	if r.StatusCode != http.StatusMovedPermanently || r.Header.Get("Location") != "console/index.html" {
		t.Fatalf("GET /console: %d Location %q, want 301 to console/index.html", r.StatusCode, r.Header.Get("Location"))
	}
	for path, ctype := range map[string]string{
		"/console/":           "text/html",
		"/console/index.html": "text/html",
		"/console/app.js":     "text/javascript",
		"/console/api.js":     "text/javascript",
		"/console/style.css":  "text/css",
	} {
		r := get(t, h, "GET", path)
		body, _ := io.ReadAll(r.Body)
		if r.StatusCode != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), ctype) || len(body) == 0 {
			t.Errorf("GET %s: %d %q %d bytes, want 200 %s", path, r.StatusCode, r.Header.Get("Content-Type"), len(body), ctype)
		}
		if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		if r.Header.Get("X-Content-Type-Options") != "nosniff" || r.Header.Get("ETag") == "" {
			t.Errorf("GET %s: headers %v", path, r.Header)
		}
		// Revalidation costs a 304 and no body.
		again := get(t, h, "GET", path, "If-None-Match", r.Header.Get("ETag"))
		if again.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with its ETag: %d, want 304", path, again.StatusCode)
		}
	}
	for _, path := range []string{"/console/nope.js", "/console/assets/app.js", "/console/../go.mod"} {
		if r := get(t, h, "GET", path); r.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, r.StatusCode)
		}
	}
	if r := get(t, h, "POST", "/console/"); r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /console/: %d, want 405", r.StatusCode)
	}
}

// TestPageLoadsOnlyEmbeddedAssets: every script and stylesheet the page
// or a module names is embedded, so the console needs no build and no
// other origin.
func TestPageLoadsOnlyEmbeddedAssets(t *testing.T) {
	t.Parallel()
	h := console.Handler()
	names := []string{"index.html"}
	seen := map[string]bool{}
	for len(names) > 0 {
		name := names[0]
		names = names[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		r := get(t, h, "GET", console.Path+"/"+name)
		if r.StatusCode != http.StatusOK {
			t.Fatalf("%s is referenced but not served: %d", name, r.StatusCode)
		}
		body, _ := io.ReadAll(r.Body)
		for _, ref := range refs(string(body)) {
			if strings.Contains(ref, "//") {
				t.Errorf("%s loads %s from elsewhere", name, ref)
				continue
			}
			names = append(names, strings.TrimPrefix(ref, "./"))
		}
	}
	for _, want := range []string{"app.js", "api.js", "turn.js", "dom.js", "style.css"} {
		if !seen[want] {
			t.Errorf("%s is never loaded", want)
		}
	}
}

// refs returns the src= and href= of HTML and the from '…' of modules.
func refs(s string) []string {
	var out []string
	for _, marker := range []string{`src="`, `href="`, `from '`} {
		for rest := s; ; {
			i := strings.Index(rest, marker)
			if i < 0 {
				break
			}
			rest = rest[i+len(marker):]
			end := strings.IndexAny(rest, `"'`)
			if ref := rest[:end]; ref != "" && !strings.HasPrefix(ref, "#") {
				out = append(out, ref)
			}
		}
	}
	return out
}

// TestAssetSize reports the console's size, raw and gzipped (go test -v).
func TestAssetSize(t *testing.T) {
	t.Parallel()
	var all bytes.Buffer
	err := fs.WalkDir(os.DirFS("assets"), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(filepath.Join("assets", name))
		all.Write(b)
		return err
	})
	if err != nil || all.Len() == 0 {
		t.Fatalf("read the assets: %v (%d bytes)", err, all.Len())
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write(all.Bytes())
	zw.Close()
	t.Logf("console assets: %d bytes raw, %d bytes gzip (all files concatenated, -9)", all.Len(), gz.Len())
}
