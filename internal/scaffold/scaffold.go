package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"
)

//go:embed files/*.tmpl
var files embed.FS

// Options describe the project to write.
type Options struct {
	// Module is the project's module path; default the directory's name.
	Module string
	// Version is the baton version go.mod requires; default v0.0.0, which
	// needs Replace (or a go get of a released version).
	Version string
	// Replace, when set, is a directory go.mod replaces baton with (a
	// checkout of baton).
	Replace string
	// Agent is the agent's name; default "assistant".
	Agent string
}

// data is what the file templates see.
type data struct {
	Options
	Package, GoVersion   string
	Function, Role, Kind string
}

var functions = []struct{ name, role, kind string }{
	{"operator", "the operator HTTP API", "OperatorFunction"},
	{"resume", "runs turns on SQS wakes", "ResumeFunction"},
	{"tick", "the scheduled reaper", "TickFunction"},
}

// Files returns the project's files by slash path.
func Files(o Options) (map[string][]byte, error) {
	if o.Module == "" {
		return nil, errors.New("scaffold: no module path")
	}
	if o.Version == "" {
		o.Version = "v0.0.0"
	}
	if o.Agent == "" {
		o.Agent = "assistant"
	}
	d := data{Options: o, Package: packageName(o.Module), GoVersion: "1.26"}
	t, err := template.ParseFS(files, "files/*.tmpl")
	if err != nil {
		return nil, fmt.Errorf("scaffold: templates: %w", err)
	}
	out := map[string][]byte{"template.yaml": Template(), "Makefile": Makefile()}
	one := func(name, tmpl string, d data) error {
		var b bytes.Buffer
		if err := t.ExecuteTemplate(&b, tmpl, d); err != nil {
			return fmt.Errorf("scaffold: %s: %w", name, err)
		}
		out[name] = b.Bytes()
		return nil
	}
	for name, tmpl := range map[string]string{
		"go.mod": "go.mod.tmpl", "agent.go": "agent.go.tmpl", "agent_test.go": "agent_test.go.tmpl",
		"cmd/dev/main.go": "dev.go.tmpl", "README.md": "README.md.tmpl", ".gitignore": "gitignore.tmpl",
		"testdata/session.json": "session.json.tmpl",
	} {
		if err := one(name, tmpl, d); err != nil {
			return nil, err
		}
	}
	for _, f := range functions {
		fd := d
		fd.Function, fd.Role, fd.Kind = f.name, f.role, f.kind
		if err := one(path.Join("functions", f.name, "main.go"), "main.go.tmpl", fd); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Write writes the project into dir, which must be empty or not exist.
func Write(dir string, o Options) error {
	if o.Module == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return fmt.Errorf("scaffold: %w", err)
		}
		o.Module = filepath.Base(abs)
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("scaffold: %s is not empty", dir)
	}
	fs, err := Files(o)
	if err != nil {
		return err
	}
	for name, b := range fs {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("scaffold: %w", err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return fmt.Errorf("scaffold: %w", err)
		}
	}
	return nil
}

// packageName is the Go package name of module path m: its last element,
// lowercased, without characters a name may not hold.
func packageName(m string) string {
	n := strings.ToLower(path.Base(m))
	n = regexp.MustCompile(`[^a-z0-9_]`).ReplaceAllString(n, "")
	if n == "" || (n[0] >= '0' && n[0] <= '9') {
		n = "agent" + n
	}
	return n
}
