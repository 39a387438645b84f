package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baton-run/baton/pkg/reducer"
)

// TestSendFiles: baton send --file attaches a small PNG inline and a
// 700 KB PDF by a presigned upload (through the dev server's S3), one
// message with both; a file whose bytes are not its type is refused and
// nothing is written.
func TestSendFiles(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	store := devStore()
	dir := t.TempDir()
	png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{5}, 64)...)
	pdf := append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("x"), 700<<10)...)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dot, big, fake := write("dot.png", png), write("big.pdf", pdf), write("fake.png", pdf[:100])
	id := strings.TrimSpace(must(t, ctx, vars{}, "new", "demo"))
	before := countFacts(t, ctx, store, id)
	if r := baton(ctx, vars{}, "send", id, "Look.", "--file", fake); r.code == 0 || !strings.Contains(r.stderr, "its bytes are application/pdf") {
		t.Fatalf("a PNG that is a PDF: exit %d, stderr %q", r.code, r.stderr)
	}
	if n := countFacts(t, ctx, store, id); n != before {
		t.Fatalf("a refused file wrote %d facts", n-before)
	}
	must(t, ctx, vars{}, "send", id, "--file", dot, "--file", big)
	var got []reducer.File
	facts, err := store.Facts(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range facts {
		if f.Message != nil && len(f.Message.Files) > 0 {
			got = f.Message.Files
		}
	}
	if len(got) != 2 || got[0].MediaType != "image/png" || got[0].Name != "dot.png" || got[1].MediaType != "application/pdf" || got[1].Size != int64(len(pdf)) {
		t.Fatalf("the message's files: %+v", got)
	}
}
