package test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/provision"
)

// TestInitProject runs baton init DIR from this checkout, with no flag but
// the directory, into a temporary directory, then the project's own go test ./... (its golden
// session replayed too), builds its three
// bootstraps, and checks its template.yaml (parsed with goformation) has
// baton's routes. go mod tidy resolves the project's module graph through
// the shared module cache (and the proxy for what it lacks).
func TestInitProject(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and tests a generated project")
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	proj := filepath.Join(t.TempDir(), "hello")
	run := func(dir string, env []string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), args[0], args[1:]...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		msg, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, msg)
		}
		return string(msg)
	}
	// From a checkout, the directory is all baton init needs: the project
	// replaces baton with this checkout.
	if got := run(root, nil, "go", "run", "./cmd/baton", "init", proj); !strings.Contains(got, "using the baton checkout at "+root) {
		t.Errorf("baton init from the checkout did not say it uses it:\n%s", got)
	}
	for _, f := range []string{"go.mod", "template.yaml", "Makefile", "README.md", "agent.go", "agent_test.go",
		"cmd/dev/main.go", "functions/operator/main.go", "functions/resume/main.go", "functions/tick/main.go", "testdata/session.json"} {
		if _, err := os.Stat(filepath.Join(proj, f)); err != nil {
			t.Errorf("baton init wrote no %s: %v", f, err)
		}
	}
	mod := []string{"GOFLAGS=-mod=mod"}
	run(proj, mod, "go", "mod", "tidy")
	if got := run(proj, mod, "go", "test", "-v", "./..."); !strings.Contains(got, "ok  \thello") || !strings.Contains(got, "--- PASS: TestGoldenSession") {
		t.Errorf("the project's go test ./... ran no test of the agent, or did not replay its golden session:\n%s", got)
	}
	bin := t.TempDir()
	run(proj, append(mod, "CGO_ENABLED=0"), "go", "build", "-tags", "lambda.norpc", "-o", bin+string(filepath.Separator), "./functions/...")
	for _, f := range functionRoles {
		if _, err := os.Stat(filepath.Join(bin, f)); err != nil {
			t.Errorf("no %s bootstrap: %v", f, err)
		}
	}
	tmpl, err := os.ReadFile(filepath.Join(proj, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want, have := routesOf(t, baton.Template()), routesOf(t, tmpl)
	if len(want) == 0 || !slices.Equal(have, want) {
		t.Errorf("the project's routes\n%v\nwant baton's\n%v", have, want)
	}
	// A fresh project's derived files match this baton's.
	run(proj, nil, "go", "run", "-C", root, "./cmd/baton", "template", "-C", proj, "--diff")
}

// routesOf lists "FUNCTION METHOD PATH" of every HttpApi event in the
// template, parsed with goformation, sorted.
func routesOf(t *testing.T, tmpl []byte) []string {
	t.Helper()
	cf, err := provision.Parse(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for name, fn := range cf.GetAllServerlessFunctionResources() {
		for _, ev := range fn.Events {
			if ev.Type != "HttpApi" || ev.Properties == nil {
				continue
			}
			b, err := json.Marshal(ev.Properties)
			if err != nil {
				t.Fatal(err)
			}
			var p struct{ Method, Path string }
			if err := json.Unmarshal(b, &p); err != nil {
				t.Fatal(err)
			}
			out = append(out, name+" "+p.Method+" "+p.Path)
		}
	}
	slices.Sort(out)
	return out
}
