package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/cli"
	"gopkg.in/yaml.v3"
)

// TestVersion: --version prints the version and exits 0, sending nothing.
func TestVersion(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"--version", "-version", "version"} {
		r := baton(t.Context(), vars{"BATON_API": "http://127.0.0.1:1"}, arg)
		if r.code != 0 || r.stderr != "" || !strings.HasPrefix(r.out, "baton ") || r.out != cli.Version()+"\n" {
			t.Errorf("baton %s: exit %d, out %q, stderr %q", arg, r.code, r.out, r.stderr)
		}
	}
}

// TestCompletion: bash, zsh and fish get a script naming every command and
// a command's flags; another shell is a usage error.
func TestCompletion(t *testing.T) {
	t.Parallel()
	for shell, marker := range map[string]string{"bash": "complete -F _baton baton", "zsh": "#compdef baton", "fish": "complete -c baton"} {
		out := must(t, t.Context(), vars{}, "completion", shell)
		if !strings.Contains(out, marker) {
			t.Errorf("%s completion lacks %q:\n%s", shell, marker, out)
		}
		for _, want := range append([]string{"version", "raise", "schedule"}, cli.Commands...) {
			if !strings.Contains(out, want) {
				t.Errorf("%s completion lacks %s", shell, want)
			}
		}
		for _, flag := range []string{"until-idle", "turn-cost", "reason"} {
			if !strings.Contains(out, flag) {
				t.Errorf("%s completion lacks the flag %s", shell, flag)
			}
		}
	}
	expect(t, t.Context(), vars{}, cli.ExitUsage, "bash, zsh or fish", "completion", "powershell")
}

// TestOutputFormats: sessions and show print -o table, json and yaml;
// --json is -o json; an unknown format is a usage error; a session of an
// agent without prices shows its cost as "—".
func TestOutputFormats(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	env := vars{"BATON_OPERATOR": fmt.Sprintf("formats-%d", time.Now().UnixNano())}
	id := strings.TrimSpace(must(t, ctx, env, "new", "demo"))

	var viaJSON, viaAlias api.Session
	if err := json.Unmarshal([]byte(must(t, ctx, env, "show", id, "-o", "json")), &viaJSON); err != nil || viaJSON.ID != id {
		t.Fatalf("show -o json: %+v, %v", viaJSON, err)
	}
	if err := json.Unmarshal([]byte(must(t, ctx, env, "show", "--json", id)), &viaAlias); err != nil || viaAlias.ID != id {
		t.Fatalf("show --json: %+v, %v", viaAlias, err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(must(t, ctx, env, "show", id, "-o", "yaml")), &doc); err != nil || doc["id"] != id || doc["agent"] != "demo" {
		t.Fatalf("show -o yaml: %v, %v", doc, err)
	}
	if out := must(t, ctx, env, "show", id, "-o", "table"); !strings.Contains(out, "session  "+id+"\n") || !strings.Contains(out, "cost —") {
		t.Fatalf("show -o table:\n%s", out)
	}
	var list []map[string]any
	if err := yaml.Unmarshal([]byte(must(t, ctx, env, "sessions", "-o", "yaml")), &list); err != nil || len(list) != 1 || list[0]["id"] != id {
		t.Fatalf("sessions -o yaml: %v, %v", list, err)
	}
	var all []api.Session
	if err := json.Unmarshal([]byte(must(t, ctx, env, "sessions", "-o", "json")), &all); err != nil || len(all) != 1 {
		t.Fatalf("sessions -o json: %+v, %v", all, err)
	}
	if out := must(t, ctx, env, "sessions"); !strings.Contains(out, "COST") || !strings.HasSuffix(strings.TrimSpace(out), "—") {
		t.Fatalf("sessions table, want the cost —:\n%s", out)
	}
	expect(t, ctx, env, cli.ExitUsage, "-o must be table, json or yaml", "sessions", "-o", "xml")
	expect(t, ctx, env, cli.ExitUsage, "-o must be table, json or yaml", "show", id, "-o", "csv")
}

// TestExportAndDelete: export writes the session's bundle to stdout and
// to a file; delete removes the session, after which show, export and
// delete are not found.
func TestExportAndDelete(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	env := vars{"BATON_OPERATOR": "lifecycle-" + t.Name()}
	id := strings.TrimSpace(must(t, ctx, env, "new", "demo"))

	var ex api.Export
	if err := json.Unmarshal([]byte(must(t, ctx, env, "export", id)), &ex); err != nil || ex.Session != id || len(ex.Facts) != 1 || ex.Streams == nil {
		t.Fatalf("export: %+v, %v", ex, err)
	}
	file := filepath.Join(t.TempDir(), "bundle.json")
	if out := must(t, ctx, env, "export", id, "-f", file); !strings.Contains(out, file) {
		t.Fatalf("export -f printed %q", out)
	}
	b, err := os.ReadFile(file)
	var fromFile api.Export
	if err != nil || json.Unmarshal(b, &fromFile) != nil || fromFile.Session != id {
		t.Fatalf("export file: %v %s", err, b)
	}
	expect(t, ctx, env, cli.ExitNotFound, "session not found", "export", "s_nope")

	expect(t, ctx, vars{"BATON_OPERATOR": "someone-else"}, cli.ExitNotFound, "session not found", "delete", id)
	if out := must(t, ctx, env, "delete", id); out != "deleted session "+id+"\n" {
		t.Fatalf("delete printed %q", out)
	}
	expect(t, ctx, env, cli.ExitNotFound, "session not found", "show", id)
	expect(t, ctx, env, cli.ExitNotFound, "session not found", "export", id)
}
