package baton_test

import (
	"go/doc/comment"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocProgramBuilds: the program the package documentation opens with
// compiles against this module.
func TestDocProgramBuilds(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for line := range strings.Lines(string(src)) {
		if rest, ok := strings.CutPrefix(line, "//"); ok {
			text = append(text, strings.TrimPrefix(rest, " "))
		} else if strings.HasPrefix(line, "package ") {
			break
		}
	}
	var program string
	for _, b := range new(comment.Parser).Parse(strings.Join(text, "")).Content {
		if c, ok := b.(*comment.Code); ok && strings.HasPrefix(c.Text, "package main") {
			program = c.Text
			break
		}
	}
	if program == "" {
		t.Fatal("doc.go shows no program (a code block starting package main)")
	}
	vetProgram(t, "the doc's program", program)
}

// TestREADMEProgramBuilds: the program the README shows under "A program
// of your own" compiles against this module.
func TestREADMEProgramBuilds(t *testing.T) {
	src, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(src), "## A program of your own")
	if !ok {
		t.Fatal(`README.md has no "A program of your own" section`)
	}
	_, rest, ok = strings.Cut(rest, "```go\n")
	if !ok {
		t.Fatal("the README's program section has no go block")
	}
	program, _, _ := strings.Cut(rest, "```")
	vetProgram(t, "the README's program", program)
}

// vetProgram vets program, a main package, inside this module (in a
// directory ./... leaves out, removed after).
func vetProgram(t *testing.T, what, program string) {
	t.Helper()
	dir, err := os.MkdirTemp(".", ".docprogram")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "vet", "./"+dir).CombinedOutput()
	if err != nil {
		t.Fatalf("%s does not compile: %v\n%s\n%s", what, err, out, program)
	}
}
