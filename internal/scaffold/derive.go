package scaffold

import (
	"bytes"
	"strings"

	baton "github.com/baton-run/baton"
)

// Derived are the files a project derives from baton's; baton template
// regenerates or diffs them.
func Derived() map[string][]byte {
	return map[string][]byte{"template.yaml": Template(), "Makefile": Makefile()}
}

// Template is a project's template.yaml: baton's, with a description that
// says it was derived. Resources, routes and parameters are baton's own;
// the functions build from the project's Makefile (BuildMethod: makefile).
func Template() []byte {
	t := baton.Template()
	head := "# Derived from baton's template.yaml by baton init; regenerate with\n" +
		"# go run github.com/baton-run/baton/cmd/baton template -w (--diff to compare).\n"
	return append([]byte(head), t...)
}

// Makefile is a project's Makefile: baton's, with the dev server the
// project's own (go run ./cmd/dev) and without baton's benchmarks.
func Makefile() []byte {
	var out bytes.Buffer
	out.WriteString("# Derived from baton's Makefile by baton init; regenerate with\n" +
		"# go run github.com/baton-run/baton/cmd/baton template -w (--diff to compare).\n")
	lines := strings.SplitAfter(string(baton.Makefile()), "\n")
	skip := false
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "bench:"):
			skip = true // baton's benchmarks name its own packages
			continue
		case skip && (strings.HasPrefix(l, "\t") || strings.TrimSpace(l) == ""):
			if strings.TrimSpace(l) == "" {
				skip = false
				out.WriteString(l)
			}
			continue
		}
		skip = false
		l = strings.ReplaceAll(l, "$(GO) run ./cmd/baton dev", "$(GO) run ./cmd/dev")
		l = strings.ReplaceAll(l, " bench ", " ")
		l = strings.Replace(l, "#   make run      the local dev server: emulator, demo agent, API on :8080",
			"#   make run      the local dev server: emulator, your agent, API on :8080", 1)
		l = strings.Replace(l, "#   make test     the full test suite (the same command CI runs)",
			"#   make test     the project's tests (go test ./...)", 1)
		if ours, ok := projectComment[strings.TrimSpace(l)]; ok {
			l = ours
		}
		out.WriteString(l)
	}
	return out.Bytes()
}

// projectComment rewrites the lines of baton's Makefile that speak of
// baton's own repository (by the line, trimmed) for a project's: "" drops
// the line.
var projectComment = map[string]string{
	"# baton — build, test, run and deploy.":                                     "# Build, test, run and deploy this baton project.\n",
	"# FUNCTIONS_DIR holds the mains the bootstraps are built from: the":         "# FUNCTIONS_DIR holds the mains the bootstraps are built from.\n",
	"# repository's own, or a program's, such as examples/supportdesk/functions": "",
	"# (make deploy FUNCTIONS_DIR=./examples/supportdesk/functions).":            "",
}
