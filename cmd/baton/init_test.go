package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInitFlagsBeforeOrAfterTheDirectory: baton init takes its flags
// before or after the directory, as --help says of every command, and
// writes the same go.mod either way.
func TestInitFlagsBeforeOrAfterTheDirectory(t *testing.T) {
	root := repoRoot(t)
	var mods []string
	for _, order := range [][]string{
		{"init", "-replace", root, "-module", "example.com/p", "DIR"},
		{"init", "DIR", "-replace", root, "-module", "example.com/p"},
		{"init", "-module", "example.com/p", "DIR", "-replace", root},
	} {
		dir := filepath.Join(t.TempDir(), "p")
		args := make([]string, len(order))
		for i, a := range order {
			args[i] = strings.ReplaceAll(a, "DIR", dir)
		}
		var out bytes.Buffer
		if err := run(t.Context(), args, &out); err != nil {
			t.Fatalf("baton %q: %v\n%s", order, err, out.String())
		}
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		mods = append(mods, string(b))
	}
	for _, m := range mods {
		if m != mods[0] || !strings.Contains(m, "module example.com/p") || !strings.Contains(m, "=> "+root) {
			t.Fatalf("go.mod differs by flag order, or lacks the module or the replace:\n%s\n---\n%s", m, mods[0])
		}
	}
}

// TestInitFromACheckoutNeedsNoFlag: a baton built from a checkout (as go
// run ./cmd/baton and go install ./cmd/baton build it) writes a project
// that uses that checkout, given only the directory; a -replace that is no
// baton checkout is refused, writing nothing.
func TestInitFromACheckoutNeedsNoFlag(t *testing.T) {
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "hello")
	t.Chdir(t.TempDir()) // found from the binary's own source, not the working directory
	var out bytes.Buffer
	if err := run(t.Context(), []string{"init", dir}, &out); err != nil {
		t.Fatalf("baton init DIR: %v\n%s", err, out.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil || !strings.Contains(string(b), "github.com/baton-run/baton => "+root) {
		t.Fatalf("go.mod %s, %v; want a replace to %s", b, err, root)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	if err := run(t.Context(), []string{"init", bad, "-replace", t.TempDir()}, &out); err == nil || !strings.Contains(err.Error(), "no baton checkout") {
		t.Fatalf("init with a -replace that is no checkout: %v", err)
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Fatalf("the refused init wrote %s: %v", bad, err)
	}
}

// repoRoot is the checkout's root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(filepath.Dir(wd))
}
