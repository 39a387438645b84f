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
		out.WriteString(l)
	}
	return out.Bytes()
}
