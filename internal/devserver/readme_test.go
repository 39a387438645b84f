package devserver_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// walkStep is one command of the README's walkthrough and the answer the
// README documents for it ("" when it documents none).
type walkStep struct{ command, want string }

// walkthrough reads the shell block under the README's "A first session":
// each command line, and the comment line after it that shows its answer
// (the JSON or word before a ": " that explains it; … stands for any text).
func walkthrough(t *testing.T, readme string) []walkStep {
	t.Helper()
	i := strings.Index(readme, "## A first session")
	if i < 0 {
		t.Fatal("README.md has no \"A first session\" section")
	}
	j := strings.Index(readme[i:], "```sh\n")
	if j < 0 {
		t.Fatal("the first session has no sh block")
	}
	block := readme[i+j+len("```sh\n"):]
	block = block[:strings.Index(block, "```")]
	var steps []walkStep
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		if c, ok := strings.CutPrefix(line, "# "); ok {
			if len(steps) == 0 {
				t.Fatalf("the block starts with a comment: %q", line)
			}
			want := c
			if strings.HasPrefix(c, "{") {
				if k := strings.Index(c, "}: "); k >= 0 {
					want = c[:k+1]
				}
			}
			steps[len(steps)-1].want = want
			continue
		}
		steps = append(steps, walkStep{command: line})
	}
	return steps
}

// pattern turns a documented answer into a regexp: … matches any text.
func pattern(want string) *regexp.Regexp {
	parts := strings.Split(want, "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*?") + "$")
}

// TestREADMEWalkthrough runs the README's first session, as written, in
// bash against a dev server (only the address in B= is the test's), and
// checks that each command with a documented answer prints it.
func TestREADMEWalkthrough(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("the README walkthrough needs %s: install it (Debian: apt-get install %s)", tool, tool)
			}
			t.Skipf("the README walkthrough needs %s (Debian: apt-get install %s)", tool, tool)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	steps := walkthrough(t, string(readme))
	if len(steps) < 5 || !strings.HasPrefix(steps[0].command, "B=") {
		t.Fatalf("walkthrough steps %+v: want B= first and a session's commands", steps)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base, _ := serve(t, ctx, nil)

	// One bash runs every command in order, as a paste would; a marker
	// after each one splits the output by command.
	var script strings.Builder
	script.WriteString("set -u\n")
	for i, s := range steps {
		cmd := s.command
		if i == 0 {
			cmd = "B=" + base
		}
		fmt.Fprintf(&script, "%s\necho\necho '@@step %d@@'\n", cmd, i)
	}
	var out, errb bytes.Buffer
	sh := exec.CommandContext(ctx, "bash", "-c", script.String())
	sh.Stdout, sh.Stderr = &out, &errb
	if err := sh.Run(); err != nil {
		t.Fatalf("the walkthrough failed: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	rest := out.String()
	for i, s := range steps {
		marker := fmt.Sprintf("@@step %d@@\n", i)
		k := strings.Index(rest, marker)
		if k < 0 {
			t.Fatalf("step %d (%s) never finished:\n%s", i, s.command, out.String())
		}
		got := strings.TrimSpace(rest[:k])
		rest = rest[k+len(marker):]
		if s.want != "" && !pattern(s.want).MatchString(got) {
			t.Errorf("step %d: %s\n  printed %q\n  the README says %q", i, s.command, got, s.want)
		}
	}
}

// TestWalkthroughReaderBites: the reader takes the answer before its
// explanation, and … matches any text.
func TestWalkthroughReaderBites(t *testing.T) {
	steps := walkthrough(t, "## A first session\n\n```sh\nB=x\ncurl a\n# {\"id\":\"s_…\"}: made\ncurl b\n# completed\n```\n")
	if len(steps) != 3 || steps[1].want != `{"id":"s_…"}` || steps[2].want != "completed" || steps[0].want != "" {
		t.Fatalf("steps %+v", steps)
	}
	if !pattern(steps[1].want).MatchString(`{"id":"s_123"}`) || pattern(steps[1].want).MatchString(`{"id":"t_123"}`) {
		t.Fatal("pattern does not match as documented")
	}
}
