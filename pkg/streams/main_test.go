package streams

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/testenv"
)

// testEnv is the emulator and the bucket shared by the package's tests. kumo
// keeps state per process, so every test uses its own session ids.
var testEnv testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &testEnv)) }

// sharedStore is a Store on the shared bucket using the emulator's client.
func sharedStore() *Store { return New(testEnv.Emu.Clients.S3, testEnv.Bucket) }

// session returns a fresh session id.
func session() string { return ids.New("s") }

// recorder is an HTTP client that counts the S3 requests passing through it
// and can make requests fail, before or after they reach the emulator.
type recorder struct {
	base aws.HTTPClient

	mu     sync.Mutex
	counts map[string]int
	// fail, when set, decides per request whether it fails: "" lets it
	// through, "before" fails it unsent, "after" sends it and then fails
	// with a retryable connection error instead of returning the answer.
	fail func(op string) string
}

func (r *recorder) Do(req *http.Request) (*http.Response, error) {
	op := req.Method
	if req.Method == http.MethodGet && req.URL.Query().Get("list-type") == "2" {
		op = "LIST"
	}
	r.mu.Lock()
	r.counts[op]++
	mode := ""
	if r.fail != nil {
		mode = r.fail(op)
	}
	r.mu.Unlock()
	switch mode {
	case "before":
		return nil, errors.New("test: request dropped before sending: connection reset by peer")
	case "after":
		resp, err := r.base.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return nil, errors.New("test: response lost: read: connection reset by peer")
	}
	return r.base.Do(req)
}

func (r *recorder) count(op string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[op]
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts = map[string]int{}
}

func (r *recorder) setFail(f func(op string) string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = f
}

// recordedStore is a Store on the shared bucket whose requests go through a
// recorder. attempts is the SDK's RetryMaxAttempts (1 disables retries).
func recordedStore(attempts int) (*Store, *recorder) {
	rec := &recorder{base: awshttp.NewBuildableClient(), counts: map[string]int{}}
	client := s3.NewFromConfig(testEnv.Emu.Clients.Config, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(testEnv.Emu.URL)
		o.UsePathStyle = true
		o.HTTPClient = rec
		o.RetryMaxAttempts = attempts
	})
	return New(client, testEnv.Bucket), rec
}

// rawChunk returns the stored bytes of a chunk object.
func rawChunk(t *testing.T, session, stream string, index int) []byte {
	t.Helper()
	out, err := testEnv.Emu.Clients.S3.GetObject(t.Context(), &s3.GetObjectInput{
		Bucket: aws.String(testEnv.Bucket), Key: aws.String(ChunkKey(session, stream, index)),
	})
	if err != nil {
		t.Fatalf("get chunk %d of %s/%s: %v", index, session, stream, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// chunkKeys lists the stored keys of a stream.
func chunkKeys(t *testing.T, session, stream string) []string {
	t.Helper()
	keys, err := sharedStore().listKeys(t.Context(), streamPrefix(session, stream), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func text(id, delta string) parts.Part {
	return parts.Part{Type: parts.TextDelta, ID: id, Delta: delta}
}

func mustAppend(t *testing.T, k *Sink, ps ...parts.Part) {
	t.Helper()
	if err := k.Append(ps...); err != nil {
		t.Fatalf("append: %v", err)
	}
}

func mustFlush(t *testing.T, k *Sink) {
	t.Helper()
	if err := k.Flush(t.Context()); err != nil {
		t.Fatalf("flush: %v", err)
	}
}
