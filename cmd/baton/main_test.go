package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

// TestHelpTouchesNothing: dev and provision asked for help print it and
// return, reaching no AWS endpoint (provision used to try).
func TestHelpTouchesNothing(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	t.Setenv("AWS_ENDPOINT_URL", srv.URL)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_MAX_ATTEMPTS", "1")
	t.Chdir(t.TempDir()) // init and template write nothing here either
	for _, args := range [][]string{{"provision", "--help"}, {"provision", "-h"}, {"dev", "--help"}, {"dev", "-h"},
		{"init", "--help"}, {"init", "-h", "proj"}, {"template", "--help"}, {"template", "-w", "-h"}} {
		var out bytes.Buffer
		if err := run(t.Context(), args, &out); err != nil || !strings.HasPrefix(out.String(), "usage:\n  baton "+args[0]+" ") {
			t.Errorf("baton %q: %v, out %q", args, err, out.String())
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("help sent %d requests to AWS", n)
	}
	if entries, _ := os.ReadDir("."); len(entries) != 0 {
		t.Errorf("help wrote %d files", len(entries))
	}
}
