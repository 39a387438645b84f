package files

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/baton-run/baton/internal/memstore"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

var (
	pngBytes = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{1}, 64)...)
	pdfBytes = []byte("%PDF-1.7\n% a document\n%%EOF\n")
	gifBytes = []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;")
)

func data(mt string, b []byte) string {
	return "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(b)
}

type fixture struct {
	bucket *memstore.Bucket
	store  *Store
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	b := memstore.NewBucket(nil)
	return fixture{bucket: b, store: New(b, "files", nil)}
}

// TestRefusals: each bad file is refused with its reason and status, and
// nothing is stored, not even the good files of the same message.
func TestRefusals(t *testing.T) {
	t.Parallel()
	private := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(pngBytes) }))
	t.Cleanup(private.Close)
	good := Input{MediaType: "image/png", URL: data("image/png", pngBytes), Name: "ok.png"}
	fetching := Policy{FetchURLs: true}
	for _, c := range []struct {
		name   string
		policy Policy
		in     []Input
		reason Reason
		status int
	}{
		{"wrong type", Policy{}, []Input{good, {MediaType: "text/html", URL: data("text/html", []byte("<html>"))}}, WrongType, 415},
		{"too big", Policy{MaxBytes: 100}, []Input{good, {MediaType: "application/pdf", URL: data("application/pdf", append(pdfBytes, make([]byte, 200)...))}}, TooBig, 413},
		{"too many", Policy{MaxFiles: 2}, []Input{good, good, good}, TooMany, 400},
		{"a data URL that lies", Policy{}, []Input{good, {MediaType: "image/png", URL: data("image/png", pdfBytes)}}, Lies, 415},
		{"a mediaType against its data URL", Policy{}, []Input{{MediaType: "image/png", URL: data("image/gif", gifBytes)}}, Lies, 415},
		{"a GIF sent as a JPEG", Policy{}, []Input{{MediaType: "image/jpeg", URL: data("image/jpeg", gifBytes)}}, Lies, 415},
		{"loopback", fetching, []Input{{MediaType: "image/png", URL: "https://127.0.0.1/x.png"}}, Private, 400},
		{"a loopback server", fetching, []Input{{MediaType: "image/png", URL: strings.Replace(private.URL, "http:", "https:", 1)}}, Private, 400},
		{"metadata", fetching, []Input{{MediaType: "image/png", URL: "https://169.254.169.254/latest/meta-data/"}}, Private, 400},
		{"RFC 1918", fetching, []Input{{MediaType: "image/png", URL: "https://10.1.2.3/a.png"}}, Private, 400},
		{"a name resolving to loopback", fetching, []Input{{MediaType: "image/png", URL: "https://localhost:1/a.png"}}, Private, 400},
		{"IPv6 loopback", fetching, []Input{{MediaType: "image/png", URL: "https://[::1]/a.png"}}, Private, 400},
		{"a URL when the agent fetches none", Policy{}, []Input{{MediaType: "image/png", URL: "https://example.com/a.png"}}, NoFetch, 400},
		{"a URL not https", fetching, []Input{{MediaType: "image/png", URL: "ftp://example.com/a.png"}}, BadFile, 400},
		{"bad base64", Policy{}, []Input{{MediaType: "image/png", URL: "data:image/png;base64,!!!"}}, BadFile, 400},
		{"an unknown upload", Policy{}, []Input{{MediaType: "image/png", URL: UploadScheme + strings.Repeat("ab", 32)}}, BadFile, 400},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			_, _, err := f.store.Ingest(t.Context(), "s_1", c.policy, c.in)
			var fe *Error
			if !errors.As(err, &fe) || fe.Reason != c.reason || fe.Status() != c.status || !errors.Is(err, ErrRefused) {
				t.Fatalf("Ingest: %v; want a refusal for %s, %d", err, c.reason, c.status)
			}
			if keys := f.bucket.Keys(""); len(keys) != 0 {
				t.Errorf("a refused message stored %v", keys)
			}
			t.Log(err)
		})
	}
}

// TestPublic: the addresses a fetch may dial.
func TestPublic(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"8.8.8.8": true, "2606:4700::1111": true, "127.0.0.1": false, "10.0.0.1": false, "172.16.5.4": false,
		"192.168.1.1": false, "169.254.169.254": false, "100.64.0.1": false, "0.0.0.0": false, "::1": false,
		"fe80::1": false, "fd00::1": false, "::ffff:127.0.0.1": false, "::ffff:10.0.0.1": false, "224.0.0.1": false,
	} {
		if got := Public(netip.MustParseAddr(s)); got != want {
			t.Errorf("Public(%s) = %v, want %v", s, got, want)
		}
	}
}

// TestIngestOncePerDigest: the same bytes twice, or in two messages, are
// one object; undo deletes only what the call created.
func TestIngestOncePerDigest(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	in := Input{MediaType: "image/png", URL: data("image/png", pngBytes), Name: "a.png"}
	refs, _, err := f.store.Ingest(t.Context(), "s_1", Policy{}, []Input{in, in})
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 2 || refs[0] != (reducer.File{Key: Key("s_1", refs[0].SHA256), MediaType: "image/png", Size: int64(len(pngBytes)), SHA256: refs[0].SHA256, Name: "a.png"}) {
		t.Fatalf("refs %+v", refs)
	}
	_, undo, err := f.store.Ingest(t.Context(), "s_1", Policy{}, []Input{in, {MediaType: "application/pdf", URL: data("application/pdf", pdfBytes)}})
	if err != nil {
		t.Fatal(err)
	}
	if keys := f.bucket.Keys("files/"); len(keys) != 2 {
		t.Fatalf("keys %v, want 2", keys)
	}
	undo(t.Context())
	if keys := f.bucket.Keys("files/"); len(keys) != 1 || keys[0] != refs[0].Key {
		t.Fatalf("after undo: %v, want the first message's image only", keys)
	}
}

// TestFetchPublic fetches an https URL when the agent allows it (the
// test's server is on loopback, which only the test lets through).
func TestFetchPublic(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(pngBytes)
	}))
	t.Cleanup(srv.Close)
	f := newFixture(t)
	f.store.Fetch.allow = func(netip.Addr) bool { return true }
	f.store.Fetch.transport = srv.Client().Transport.(*http.Transport).Clone()
	refs, _, err := f.store.Ingest(t.Context(), "s_1", Policy{FetchURLs: true}, []Input{{URL: srv.URL + "/a.png"}})
	if err != nil || len(refs) != 1 || refs[0].MediaType != "image/png" {
		t.Fatalf("Ingest: %+v, %v", refs, err)
	}
}

// TestUploadChecked: an upload is checked where it lies: its size, its
// declared type against its bytes.
func TestUploadChecked(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	sha := strings.Repeat("0", 64)
	_, err := f.bucket.PutObject(t.Context(), &s3.PutObjectInput{Key: aws.String(Key("s_1", sha)), Body: bytes.NewReader(gifBytes)})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = f.store.Ingest(t.Context(), "s_1", Policy{}, []Input{{MediaType: "application/pdf", URL: UploadScheme + sha}})
	if fe := (*Error)(nil); !errors.As(err, &fe) || fe.Reason != Lies {
		t.Fatalf("an upload whose bytes are a GIF, named a PDF: %v", err)
	}
	refs, _, err := f.store.Ingest(t.Context(), "s_1", Policy{}, []Input{{MediaType: "image/gif", URL: UploadScheme + sha}})
	if err != nil || refs[0].Size != int64(len(gifBytes)) {
		t.Fatalf("%+v, %v", refs, err)
	}
	if _, _, err := f.store.Ingest(t.Context(), "s_2", Policy{}, []Input{{MediaType: "image/gif", URL: UploadScheme + sha}}); err == nil {
		t.Fatal("another session's upload was accepted")
	}
}

// TestPresignUpload: the presigned PUT signs the size, type and digest;
// a declared type or size the agent refuses gets no URL.
func TestPresignUpload(t *testing.T) {
	t.Parallel()
	client := s3.New(s3.Options{Region: "us-east-1", Credentials: staticCreds{}, BaseEndpoint: aws.String("https://s3.example.com"), UsePathStyle: true})
	st := New(memstore.NewBucket(nil), "b", s3.NewPresignClient(client))
	sha := strings.Repeat("ab", 32)
	p, err := st.PresignUpload(t.Context(), "s_1", Policy{}, Upload{MediaType: "application/pdf", Size: 15 << 20, SHA256: sha, Name: "r.pdf"}, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.URL, "X-Amz-SignedHeaders=content-length%3Bcontent-type%3Bhost%3Bx-amz-checksum-sha256") || p.Method != "PUT" || p.File.URL != UploadScheme+sha {
		t.Fatalf("presigned %+v", p)
	}
	if p.Headers["Content-Length"] != "15728640" || p.Headers["Content-Type"] != "application/pdf" {
		t.Fatalf("headers %v", p.Headers)
	}
	for _, u := range []Upload{
		{MediaType: "application/zip", Size: 10, SHA256: sha},
		{MediaType: "application/pdf", Size: 21 << 20, SHA256: sha},
		{MediaType: "application/pdf", Size: 10, SHA256: "nothex"},
	} {
		if _, err := st.PresignUpload(t.Context(), "s_1", Policy{}, u, time.Unix(0, 0)); !errors.Is(err, ErrRefused) {
			t.Errorf("%+v: %v, want refused", u, err)
		}
	}
}

type staticCreds struct{}

func (staticCreds) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret"}, nil
}

// TestLoaderCopies: Load sets the bytes on copies, leaving its input as
// it was, and reads each digest once.
func TestLoaderCopies(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	refs, _, err := f.store.Ingest(t.Context(), "s_1", Policy{}, []Input{{MediaType: "image/png", URL: data("image/png", pngBytes)}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []conversation.Message{conversation.UserMessage([]reducer.Message{{Text: "look", Files: refs}})}
	l := f.store.Loader("s_1")
	out, err := l.Load(t.Context(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out[0].Content[1].Data, pngBytes) || msgs[0].Content[1].Data != nil {
		t.Fatalf("loaded %q, input left %q", out[0].Content[1].Data, msgs[0].Content[1].Data)
	}
}

// TestCopySession: a fork's copy of the files outlives the original's
// delete, and its loads read the copy.
func TestCopySession(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	refs, _, err := f.store.Ingest(t.Context(), "s_1", Policy{}, []Input{{MediaType: "image/png", URL: data("image/png", pngBytes)}, {MediaType: "application/pdf", URL: data("application/pdf", pdfBytes)}})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f.store.CopySession(t.Context(), "s_1", "s_2"); err != nil || n != 2 {
		t.Fatalf("CopySession: %d, %v", n, err)
	}
	for _, k := range f.bucket.Keys(Prefix("s_1")) {
		if _, err := f.bucket.DeleteObject(t.Context(), &s3.DeleteObjectInput{Key: aws.String(k)}); err != nil {
			t.Fatal(err)
		}
	}
	msgs := []conversation.Message{conversation.UserMessage([]reducer.Message{{Text: "look", Files: refs}})}
	out, err := f.store.Loader("s_2").Load(t.Context(), msgs)
	if err != nil || !bytes.Equal(out[0].Content[2].Data, pdfBytes) {
		t.Fatalf("the fork's load: %v", err)
	}
	if _, err := f.store.Loader("s_1").Load(t.Context(), msgs); err == nil {
		t.Fatal("the deleted original still loads its files")
	}
}
