package batontest_test

import (
	"bytes"
	"strings"
	"testing"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/pkg/reducer"
)

// TestPostFiles: the kit posts a message with an image as the API does,
// checked against the Go agent's Files policy (one file a message here):
// a PNG that is a PDF's bytes, and two files, are refused with nothing
// written; the image's reference is in the message's fact, and the turn
// on it runs (its model call loads the bytes from S3).
func TestPostFiles(t *testing.T) {
	model, err := baton.Script([]byte(`{"steps":[{"text":"A picture."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	kit := batontest.New(t, host.Config{Agents: []baton.Agent{{Name: "eyes", Model: model, Files: baton.Files{MaxFiles: 1}}}})
	s := kit.Session("eyes")
	png := batontest.File{MediaType: "image/png", Name: "a.png", Data: append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{3}, 40)...)}
	pdf := batontest.File{MediaType: "image/png", Name: "b.png", Data: []byte("%PDF-1.4\n%%EOF\n")}
	n := len(s.Facts())
	for _, bad := range [][]batontest.File{{pdf}, {png, png}} {
		if err := s.TryPostFiles("Look.", bad...); err == nil || !strings.Contains(err.Error(), "file") {
			t.Fatalf("posting %d files: %v, want a refusal", len(bad), err)
		}
	}
	if len(s.Facts()) != n {
		t.Fatal("a refused message wrote a fact")
	}
	s.PostFiles("", png)
	var got []reducer.File
	for _, f := range s.Facts() {
		if f.Message != nil {
			got = f.Message.Files
		}
	}
	if len(got) != 1 || got[0].MediaType != "image/png" || got[0].Size != int64(len(png.Data)) || got[0].Name != "a.png" {
		t.Fatalf("the message's files: %+v", got)
	}
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("the turn: %+v", out)
	}
}
