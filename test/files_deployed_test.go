package test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/test/harness"
)

// TestDeployedFileUpload: through the real bootstraps behind the modelled
// front door, a 15 MB PDF goes by the presigned PUT the operator function
// signs (straight to S3: the door's body limit never sees it), a message
// names it, and the model (an OpenAI-compatible server) receives it whole
// as a file input; another caller cannot read it (404); the session's
// delete removes it from the bucket.
func TestDeployedFileUpload(t *testing.T) {
	t.Parallel()
	kumo(t)
	var mu sync.Mutex
	var bodies [][]byte
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Read."},"finish_reason":null}]}`+"\n\n")
		fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
		fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}`+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(model.Close)
	agents := filepath.Join(t.TempDir(), "agents.json")
	if err := os.WriteFile(agents, []byte(`{"agents":{"reader":{"provider":"openai","model":"m","baseURL":"`+model.URL+`/v1/","apiKeyEnv":"FILES_MODEL_KEY",
	 "system":"You read.","limits":{"budget":"20s","margin":"3s"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	d := harness.StartDeployed(t, frontLimits(), harness.WithAgents(agents), harness.WithEnv(map[string]string{"FILES_MODEL_KEY": "k"}))
	var s struct{ ID string }
	if r := call(t, d, "POST", "/sessions", d.Token(alice), `{"agent":"reader"}`, nil); r.code != http.StatusCreated || json.Unmarshal(r.body, &s) != nil {
		t.Fatalf("create: %v", r)
	}
	pdf := append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("0123456789abcdef"), (15<<20)/16)...)
	sum := sha256.Sum256(pdf)
	sha := hex.EncodeToString(sum[:])
	var up api.Upload
	r := call(t, d, "POST", "/sessions/"+s.ID+"/uploads", d.Token(alice), fmt.Sprintf(`{"mediaType":"application/pdf","size":%d,"sha256":%q,"filename":"big.pdf"}`, len(pdf), sha), nil)
	if r.code != http.StatusOK || json.Unmarshal(r.body, &up) != nil {
		t.Fatalf("upload: %v", r)
	}
	req, _ := http.NewRequestWithContext(t.Context(), up.Method, up.URL, bytes.NewReader(pdf))
	for k, v := range up.Headers {
		req.Header.Set(k, v)
	}
	req.ContentLength = int64(len(pdf))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT to the presigned URL: %s", resp.Status)
	}
	msg, _ := json.Marshal(api.MessageRequest{Text: "Summarise.", Files: []api.FilePart{up.File}})
	if r := call(t, d, "POST", "/sessions/"+s.ID+"/messages", d.Token(alice), string(msg), nil); r.code != http.StatusAccepted {
		t.Fatalf("message: %v", r)
	}
	waitAnswered(t, d, s.ID)
	mu.Lock()
	got := bodies
	mu.Unlock()
	want := `"file_data":"data:application/pdf;base64,` + base64.StdEncoding.EncodeToString(pdf) + `","filename":"big.pdf"`
	if len(got) != 1 || !bytes.Contains(got[0], []byte(want)) {
		t.Fatalf("the model got %d requests, none holding the whole PDF", len(got))
	}
	t.Logf("a %d-byte PDF went by presigned PUT; the model's request was %d bytes", len(pdf), len(got[0]))
	if r := call(t, d, "GET", "/sessions/"+s.ID+"/files/"+sha, d.Token(bob), "", nil); r.code != http.StatusNotFound {
		t.Fatalf("another caller's read: %v, want 404", r)
	}
	listed := func() int {
		list, err := d.Emulator.Clients.S3.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(d.Resources.Bucket), Prefix: aws.String("files/" + s.ID + "/")})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Contents)
	}
	if n := listed(); n != 1 {
		t.Fatalf("before the delete the bucket lists %d files of the session, want the PDF", n)
	}
	if r := call(t, d, "DELETE", "/sessions/"+s.ID, d.Token(alice), "", nil); r.code != http.StatusNoContent {
		t.Fatalf("delete: %v", r)
	}
	if n := listed(); n != 0 {
		t.Errorf("after the delete the bucket still lists %d files of the session", n)
	}
}
