package scaffold_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/scaffold"
)

// The derived Makefile keeps baton's build targets, runs the project's own
// dev server, and drops baton's benchmarks; the template is baton's.
func TestDerived(t *testing.T) {
	mk := string(scaffold.Makefile())
	for _, want := range []string{"build-OperatorFunction:", "build-ResumeFunction:", "build-TickFunction:", "$(GO) run ./cmd/dev", "deploy:"} {
		if !strings.Contains(mk, want) {
			t.Errorf("Makefile has no %q", want)
		}
	}
	// Nothing of baton's own repository: its examples, its CI, a lint that
	// needs a git repository.
	for _, bad := range []string{"bench", "./cmd/baton", "./pkg/", "examples/", "git ls-files", "CI runs", "# baton —"} {
		if strings.Contains(mk, bad) {
			t.Errorf("Makefile still names %q", bad)
		}
	}
	if !strings.HasSuffix(string(scaffold.Template()), string(baton.Template())) {
		t.Error("template.yaml is not baton's")
	}
}

// Files holds every file of the project, with the module's name in go.mod
// and the replace when asked; Write refuses a directory that is not empty.
func TestFiles(t *testing.T) {
	fs, err := scaffold.Files(scaffold.Options{Module: "example.com/my-agent", Replace: "/src/baton"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"go.mod", "agent.go", "agent_test.go", "cmd/dev/main.go", "README.md", "template.yaml", "Makefile",
		"functions/operator/main.go", "functions/resume/main.go", "functions/tick/main.go", "testdata/session.json"} {
		if len(fs[f]) == 0 {
			t.Errorf("no %s", f)
		}
	}
	// The golden session is an export of a session of the project's agent.
	var golden api.Export
	if err := json.Unmarshal(fs["testdata/session.json"], &golden); err != nil || len(golden.Facts) == 0 || golden.Facts[0].Agent != "assistant" || len(golden.Streams) != 1 {
		t.Errorf("testdata/session.json is not an export of a session of the assistant agent (%v):\n%s", err, fs["testdata/session.json"])
	}
	if !strings.Contains(string(fs["agent_test.go"]), "batontest.Replay(") {
		t.Error("agent_test.go does not replay the golden session")
	}
	mod := string(fs["go.mod"])
	if !strings.Contains(mod, "module example.com/my-agent") || !strings.Contains(mod, "=> /src/baton") {
		t.Errorf("go.mod:\n%s", mod)
	}
	if !strings.Contains(string(fs["agent.go"]), "package myagent") {
		t.Errorf("agent.go's package is not myagent:\n%s", fs["agent.go"])
	}
	if strings.Contains(string(fs["functions/operator/main.go"]), "providers") {
		t.Error("the operator registers providers")
	}
	if _, err := scaffold.Files(scaffold.Options{}); err == nil {
		t.Error("Files without a module: no error")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := scaffold.Write(dir, scaffold.Options{Module: "m"}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("Write into a non-empty directory: %v", err)
	}
}
