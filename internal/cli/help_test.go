package cli_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/baton-run/baton/internal/cli"
)

// TestHelpOfEveryCommand: -h, -help and --help, wherever they stand among
// a client command's arguments, print that command's own help to stdout,
// exit 0 and send no request; "baton help COMMAND" prints the same lines.
func TestHelpOfEveryCommand(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		http.Error(w, `{"error":"no"}`, http.StatusTeapot)
	}))
	defer srv.Close()
	env := vars{"BATON_API": srv.URL}
	commands := append([]string{"raise", "wake", "schedule"}, cli.Commands...)
	for _, name := range commands {
		for _, args := range [][]string{{name, "--help"}, {name, "-h"}, {name, "s_x", "-help"}, {name, "s_x", "a", "--help", "b"}} {
			r := baton(t.Context(), env, args...)
			if r.code != 0 || r.stderr != "" || !strings.HasPrefix(r.out, "usage:\n  baton "+name+" ") || !strings.Contains(r.out, "-api") {
				t.Errorf("baton %q: exit %d, stderr %q, out %q; want %s's help", args, r.code, r.stderr, r.out, name)
			}
			if strings.Contains(r.out, "Exit codes") {
				t.Errorf("baton %q printed the whole usage, not the command's", args)
			}
		}
		h, ok := cli.Help(name)
		if r := baton(t.Context(), env, "help", name); !ok || r.code != 0 || r.out != h {
			t.Errorf("baton help %s: exit %d, out %q", name, r.code, r.out)
		}
	}
	for _, name := range []string{"dev", "provision"} {
		if h, ok := cli.Help(name); !ok || !strings.HasPrefix(h, "usage:\n  baton "+name+" ") {
			t.Errorf("Help(%s) = %q, %v", name, h, ok)
		}
	}
	// After "--", --help is an argument: send posts it.
	if r := baton(t.Context(), env, "send", "s_x", "--", "--help"); r.code == 0 || requests.Load() != 1 {
		t.Errorf("send -- --help: exit %d, %d requests", r.code, requests.Load())
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("help sent %d requests", n-1)
	}
}
