package test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestMarkdownTables checks every Markdown file of the repository for the
// table scars a merge leaves: a table split by a blank line (GitHub renders
// the rest as raw pipes) and a row repeated within one table.
func TestMarkdownTables(t *testing.T) {
	t.Parallel()
	n := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".md") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		for _, p := range tableProblems(string(b)) {
			t.Errorf("%s: %s", path, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("found no Markdown file")
	}
}

// separator is a table's header separator row.
var separator = regexp.MustCompile(`^\|(\s*:?-+:?\s*\|)+\s*$`)

// tableProblems lists the split tables and repeated rows of a Markdown
// text, by line number. Lines inside fenced code blocks are not tables.
func tableProblems(text string) []string {
	var out []string
	lines := strings.Split(text, "\n")
	fenced := false
	var rows map[string]int // the current table's rows, by text, to their line
	lastTableEnd := -10     // the line after the last table's last row
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(l, "|") {
			if rows != nil {
				lastTableEnd = i
			}
			rows = nil
			continue
		}
		if rows == nil { // a table starts: with a header and its separator, or it is a split-off tail
			if i+1 >= len(lines) || !separator.MatchString(strings.TrimSpace(lines[i+1])) {
				if blankBetween(lines, lastTableEnd, i) {
					out = append(out, lineRef(i)+": a table split by a blank line (this row follows a blank line, with no header)")
				} else {
					out = append(out, lineRef(i)+": a table row with no header and separator row")
				}
			}
			rows = map[string]int{}
		}
		if separator.MatchString(l) {
			continue
		}
		if first, ok := rows[l]; ok {
			out = append(out, lineRef(i)+": repeats the row of "+lineRef(first)+": "+l)
		}
		rows[l] = i
	}
	return out
}

// blankBetween reports whether only blank lines stand between line end
// (exclusive of tables) and line i.
func blankBetween(lines []string, end, i int) bool {
	if end < 0 || end >= i {
		return false
	}
	for _, l := range lines[end:i] {
		if strings.TrimSpace(l) != "" {
			return false
		}
	}
	return true
}

func lineRef(i int) string { return "line " + strconv.Itoa(i+1) }

// TestTableProblemsFindsTheScars: the checker itself finds a split table
// and a repeated row, and passes whole tables and pipes in code.
func TestTableProblemsFindsTheScars(t *testing.T) {
	t.Parallel()
	good := "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\ntext\n\n| c |\n| :-: |\n| 5 |\n\n```\n| not | a table |\n| not | a table |\n```\n"
	if got := tableProblems(good); len(got) != 0 {
		t.Errorf("whole tables: %v", got)
	}
	split := "| a | b |\n|---|---|\n| 1 | 2 |\n\n| 3 | 4 |\n"
	if got := tableProblems(split); len(got) != 1 || !strings.Contains(got[0], "line 5: a table split by a blank line") {
		t.Errorf("split table: %v", got)
	}
	repeated := "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n| 1 | 2 |\n"
	if got := tableProblems(repeated); len(got) != 1 || !strings.Contains(got[0], "line 5: repeats the row of line 3") {
		t.Errorf("repeated row: %v", got)
	}
}
