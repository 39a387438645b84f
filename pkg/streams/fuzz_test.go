package streams

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/baton-run/baton/internal/parts"
)

// chunkSeeds are chunk bodies as the sink writes them.
var chunkSeeds = []string{
	`{"parts":[{"type":"start","messageId":"turn_1"},{"type":"start-step"},{"type":"text-start","id":"t0"},{"type":"text-delta","id":"t0","delta":"Hel"}]}`,
	`{"parts":[{"type":"text-delta","id":"t0","delta":"lo"},{"type":"text-end","id":"t0"},{"type":"tool-input-available","toolCallId":"call_1","toolName":"get_weather","input":{"city":"Paris"}},{"type":"message-metadata","messageMetadata":{"usage":{"inputTokens":10,"outputTokens":5},"finishReason":"tool-calls"}},{"type":"finish-step"}]}`,
	`{"parts":[{"type":"tool-approval-request","approvalId":"ap_1","toolCallId":"call_1"},{"type":"data-suspended","data":{"cause":"approval"}}]}`,
	`{"parts":[{"type":"tool-approval-response","approvalId":"ap_1","approved":true},{"type":"tool-output-available","toolCallId":"call_1","output":{"temp":21}},{"type":"finish","finishReason":"stop"}],"closed":"completed"}`,
	`{"parts":[],"closed":"aborted"}`,
	`{"parts":[{"type":"error","errorText":"boom"}],"closed":"failed"}`,
	`{"parts":null}`, `{}`, `null`, `[]`, `{"parts":[{}]}`, `{"parts":[],"closed":"exploded"}`, `{"parts":[]} {}`,
}

// FuzzParseChunk decodes fuzzed chunk bodies as Read does. A body is
// refused with an error wrapping ErrCorrupt, or gives parts that all have
// a type and a known close status, and encodes back to a body that
// decodes to the same chunk.
func FuzzParseChunk(f *testing.F) {
	for _, s := range chunkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		doc, err := parseChunk("streams/s/t/0000000000.json", body)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "0000000000.json") {
				t.Fatalf("decode %q: %v, want ErrCorrupt naming the key", body, err)
			}
			return
		}
		if doc.Parts == nil {
			t.Fatal("nil parts")
		}
		for i, p := range doc.Parts {
			if p.Type == "" {
				t.Fatalf("part %d without a type", i)
			}
		}
		switch doc.Closed {
		case Open, Completed, Failed, Cancelled, Aborted:
		default:
			t.Fatalf("close status %q", doc.Closed)
		}
		enc, err := json.Marshal(doc)
		if err != nil {
			t.Fatalf("a decoded chunk does not encode: %v", err)
		}
		again, err := parseChunk("k", enc)
		if err != nil {
			t.Fatalf("re-encoded chunk %s: %v", enc, err)
		}
		enc2, _ := json.Marshal(again)
		if string(enc2) != string(enc) {
			t.Fatalf("round trip\n%s\n%s", enc, enc2)
		}
	})
}

// FuzzParseCursor parses fuzzed cursors (the after= of a stream read). A
// cursor is refused with ErrBadCursor, or names a chunk and part whose
// canonical spelling it is.
func FuzzParseCursor(f *testing.F) {
	for _, s := range []string{"", "0.0", "3.12", "9999999999.0", "12.2147483647", "x", "-1.2", "1", "1.", ".1",
		"1.2.3", "01.2", "1.02", "+1.2", " 1.2", "1.x", "10000000000.0", "1.2147483648", "99999999999999999999.1", "１.２"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCursor(s)
		if err != nil {
			if !errors.Is(err, ErrBadCursor) || c != "" {
				t.Fatalf("ParseCursor(%q) = %q, %v; want ErrBadCursor", s, c, err)
			}
			return
		}
		chunk, part, err := c.position()
		if err != nil {
			t.Fatalf("accepted cursor %q has no position: %v", s, err)
		}
		if s == "" {
			if chunk != -1 || part != -1 {
				t.Fatalf("the empty cursor is at %d.%d", chunk, part)
			}
			return
		}
		if chunk < 0 || chunk >= maxChunks || part < 0 || part > maxPartIndex || CursorAt(chunk, part) != c {
			t.Fatalf("ParseCursor(%q) names %d.%d", s, chunk, part)
		}
	})
}

// TestReadRefusesCorruptChunks stores chunk objects the sink never writes
// and checks that Read and Streams refuse them with ErrCorrupt, and that the
// stored objects are left as they were.
func TestReadRefusesCorruptChunks(t *testing.T) {
	ctx := t.Context()
	store := sharedStore()
	for i, body := range []string{`null`, `{"parts":null}`, `{"parts":[{}]}`, `{"parts":[],"closed":"exploded"}`, `[]`, `{"parts":[]} {}`, "\xff"} {
		sess := session()
		good := store.Open(sess, "t")
		mustAppend(t, good, parts.Part{Type: parts.Start})
		mustFlush(t, good)
		key := ChunkKey(sess, "t", 1)
		if _, err := testEnv.Emu.Clients.S3.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(testEnv.Bucket), Key: aws.String(key), Body: strings.NewReader(body),
		}); err != nil {
			t.Fatal(err)
		}
		if p, err := store.Read(ctx, sess, "t", ""); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%d: read of a stream with chunk %q: %+v, %v; want ErrCorrupt", i, body, p, err)
		}
		if p, err := store.Read(ctx, sess, "t", "0.0"); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%d: read after 0.0 of a stream with chunk %q: %+v, %v; want ErrCorrupt", i, body, p, err)
		}
		if infos, err := store.Streams(ctx, sess); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%d: streams of a session with chunk %q: %+v, %v; want ErrCorrupt", i, body, infos, err)
		}
		keys, err := store.listKeys(ctx, streamPrefix(sess, "t"), "", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 2 {
			t.Errorf("%d: %d objects after refused reads, want the 2 stored", i, len(keys))
		}
		got, err := store.getObject(ctx, key)
		if err != nil || string(got) != body {
			t.Errorf("%d: chunk now %q, %v", i, got, err)
		}
	}
}
