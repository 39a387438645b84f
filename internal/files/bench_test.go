package files

import (
	"bytes"
	"testing"

	"github.com/baton-run/baton/internal/memstore"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

// BenchmarkIngest checks and stores a 1 MiB PNG from its data URL (the
// base64 decode, the sniff, the digest and one PutObject, in memory).
func BenchmarkIngest(b *testing.B) {
	img := append(append([]byte(nil), pngBytes...), bytes.Repeat([]byte{9}, 1<<20)...)
	in := []Input{{MediaType: "image/png", URL: data("image/png", img)}}
	b.SetBytes(int64(len(img)))
	for b.Loop() {
		st := New(memstore.NewBucket(nil), "b", nil)
		if _, _, err := st.Ingest(b.Context(), "s_1", Policy{}, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad loads a 1 MiB file into a model input: the first step's
// read (GetObject and the digest check), then a later step's, from the
// invocation's cache.
func BenchmarkLoad(b *testing.B) {
	img := append(append([]byte(nil), pngBytes...), bytes.Repeat([]byte{9}, 1<<20)...)
	st := New(memstore.NewBucket(nil), "b", nil)
	refs, _, err := st.Ingest(b.Context(), "s_1", Policy{}, []Input{{MediaType: "image/png", URL: data("image/png", img)}})
	if err != nil {
		b.Fatal(err)
	}
	msgs := []conversation.Message{conversation.UserMessage([]reducer.Message{{Text: "look", Files: refs}})}
	b.Run("first", func(b *testing.B) {
		b.SetBytes(int64(len(img)))
		for b.Loop() {
			if _, err := st.Loader("s_1").Load(b.Context(), msgs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		l := st.Loader("s_1")
		for b.Loop() {
			if _, err := l.Load(b.Context(), msgs); err != nil {
				b.Fatal(err)
			}
		}
	})
}
