package operator_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/chat"
	"github.com/baton-run/baton/internal/files"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/operator"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
)

var (
	tinyPNG = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{7}, 100)...)
	tinyPDF = []byte("%PDF-1.7\n% a document\n%%EOF\n")
)

type creds struct{}

func (creds) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret"}, nil
}

// withFiles gives e's store a file store on its bucket in memory, whose
// URLs are presigned for a made-up S3 endpoint, and the agent policy p.
func withFiles(e *env, p files.Policy) {
	client := s3.New(s3.Options{Region: "us-east-1", Credentials: creds{}, BaseEndpoint: aws.String("https://s3.example.com"), UsePathStyle: true})
	e.store.Files = files.New(e.mem.Bucket, "memory", s3.NewPresignClient(client))
	e.store.FilePolicy = func(string) files.Policy { return p }
}

func dataURLOf(mt string, b []byte) string {
	return "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(b)
}

func messageBody(t *testing.T, text string, fs ...api.FilePart) string {
	t.Helper()
	return string(mustMarshal(t, api.MessageRequest{Text: text, Files: fs}))
}

// TestMessageFiles posts a message with an image and a PDF; refuses, with
// nothing written (no fact, no object), a type the agent does not take, a
// file too big, too many files, a data URL whose bytes are another type,
// and a URL to a private address; lets only the owner read a file; and
// the session's delete removes its files from the bucket.
func TestMessageFiles(t *testing.T) {
	t.Parallel()
	alice, bob := ids.New("alice"), ids.New("bob")
	e := newEnv(t, nil)
	withFiles(e, files.Policy{MaxBytes: 1000, MaxFiles: 2, FetchURLs: true})
	s := e.create(alice)
	img := api.FilePart{MediaType: "image/png", URL: dataURLOf("image/png", tinyPNG), Filename: "dot.png"}
	pdf := api.FilePart{MediaType: "application/pdf", URL: dataURLOf("application/pdf", tinyPDF), Filename: "r.pdf"}
	path := "/sessions/" + s.ID + "/messages"
	e.must(http.StatusAccepted, req{method: "POST", path: path, user: alice, body: messageBody(t, "Look.", img, pdf)})
	fs := e.facts(s.ID)
	last := fs[len(fs)-1].Message
	sum := sha256.Sum256(tinyPNG)
	sha := hex.EncodeToString(sum[:])
	if last == nil || len(last.Files) != 2 || last.Files[0] != (reducer.File{Key: files.Key(s.ID, sha), MediaType: "image/png", Size: int64(len(tinyPNG)), SHA256: sha, Name: "dot.png"}) {
		t.Fatalf("the message's files: %+v", last)
	}
	keys := e.mem.Bucket.Keys(files.Prefix(s.ID))
	if len(keys) != 2 {
		t.Fatalf("stored %v, want the image and the PDF", keys)
	}
	// An image alone, no text: accepted.
	e.must(http.StatusAccepted, req{method: "POST", path: path, user: alice, body: messageBody(t, "", img)})
	n := len(e.facts(s.ID))

	for _, c := range []struct {
		name string
		fs   []api.FilePart
		want int
		says string
	}{
		{"wrong type", []api.FilePart{img, {MediaType: "text/html", URL: dataURLOf("text/html", []byte("<html><body>hi"))}}, 415, "not accepted"},
		{"too big", []api.FilePart{{MediaType: "image/png", URL: dataURLOf("image/png", append(tinyPNG, make([]byte, 2000)...))}}, 413, "larger than the 1000"},
		{"too many", []api.FilePart{img, img, pdf}, 400, "may carry 2 files"},
		{"a data URL that lies", []api.FilePart{{MediaType: "image/png", URL: dataURLOf("image/png", tinyPDF)}}, 415, "its bytes are application/pdf"},
		{"a private address", []api.FilePart{{MediaType: "image/png", URL: "https://169.254.169.254/latest/meta-data/"}}, 400, "private address"},
		{"a name that resolves to loopback", []api.FilePart{{MediaType: "image/png", URL: "https://localhost:9/x.png"}}, 400, "private address"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := e.mem.Bucket.Keys("")
			got := e.must(c.want, req{method: "POST", path: path, user: alice, body: messageBody(t, "Again.", c.fs...)})
			if msg := got.errorMessage(t); !strings.Contains(msg, c.says) {
				t.Errorf("error %q does not say %q", msg, c.says)
			}
			if len(e.facts(s.ID)) != n {
				t.Errorf("a refused message wrote a fact")
			}
			if after := e.mem.Bucket.Keys(""); len(after) != len(before) {
				t.Errorf("a refused message stored %d objects", len(after)-len(before))
			}
		})
	}

	// Reads: the owner is redirected to a presigned GET; another caller
	// (and a digest no message names) gets 404.
	hr, _ := http.NewRequestWithContext(t.Context(), "GET", e.srv.URL+"/sessions/"+s.ID+"/files/"+sha, nil)
	hr.Header.Set(userHeader, alice)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	read, err := noFollow.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	read.Body.Close()
	if read.StatusCode != http.StatusFound {
		t.Fatalf("the owner's read: %s, want 302", read.Status)
	}
	if loc := read.Header.Get("Location"); !strings.Contains(loc, files.Key(s.ID, sha)) || !strings.Contains(loc, "X-Amz-Signature=") {
		t.Errorf("Location %q is no presigned GET of the file", loc)
	}
	e.must(http.StatusNotFound, req{method: "GET", path: "/sessions/" + s.ID + "/files/" + sha, user: bob})
	e.must(http.StatusNotFound, req{method: "GET", path: "/sessions/" + s.ID + "/files/" + strings.Repeat("0", 64), user: alice})
	e.must(http.StatusNotFound, req{method: "POST", path: "/sessions/" + s.ID + "/uploads", user: bob,
		body: fmt.Sprintf(`{"mediaType":"image/png","size":10,"sha256":%q}`, sha)})

	// The export names each file once, with a presigned GET.
	var ex api.Export
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID + "/export", user: alice}).json(t, &ex)
	if len(ex.Files) != 2 || ex.Files[0].SHA256 != sha || !strings.Contains(ex.Files[0].URL, "X-Amz-Signature=") {
		t.Errorf("the export's files: %+v", ex.Files)
	}

	// Delete removes the session's files (the bucket listed).
	e.must(http.StatusNoContent, req{method: "DELETE", path: "/sessions/" + s.ID, user: alice})
	if left := e.mem.Bucket.Keys(files.Prefix(s.ID)); len(left) != 0 {
		t.Errorf("after the delete the bucket still holds %v", left)
	}
}

// TestUploadRoute: POST /sessions/{id}/uploads presigns a PUT that signs
// the size, type and digest, for what the agent accepts only.
func TestUploadRoute(t *testing.T) {
	t.Parallel()
	alice := ids.New("alice")
	e := newEnv(t, nil)
	withFiles(e, files.Policy{})
	s := e.create(alice)
	sha := strings.Repeat("ab", 32)
	var up api.Upload
	e.must(http.StatusOK, req{method: "POST", path: "/sessions/" + s.ID + "/uploads", user: alice,
		body: fmt.Sprintf(`{"mediaType":"application/pdf","size":%d,"sha256":%q,"filename":"big.pdf"}`, 15<<20, sha)}).json(t, &up)
	if up.Method != "PUT" || !strings.Contains(up.URL, "content-length%3Bcontent-type%3Bhost%3Bx-amz-checksum-sha256") ||
		up.Headers["Content-Length"] != fmt.Sprint(15<<20) || up.File.URL != files.UploadScheme+sha {
		t.Fatalf("upload %+v", up)
	}
	for body, want := range map[string]int{
		fmt.Sprintf(`{"mediaType":"application/zip","size":10,"sha256":%q}`, sha):         415,
		fmt.Sprintf(`{"mediaType":"application/pdf","size":%d,"sha256":%q}`, 21<<20, sha): 413,
		`{"mediaType":"application/pdf","size":10,"sha256":"abc"}`:                        400,
	} {
		e.must(want, req{method: "POST", path: "/sessions/" + s.ID + "/uploads", user: alice, body: body})
	}
	// Named before it is uploaded: refused, nothing written.
	n := len(e.facts(s.ID))
	e.must(http.StatusBadRequest, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: alice, body: messageBody(t, "Here.", api.FilePart(up.File))})
	if len(e.facts(s.ID)) != n {
		t.Error("a message naming a missing upload wrote a fact")
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestChatFiles: POST /chat takes the AI SDK's file parts; the chat's
// history shows them as file parts whose URL is a presigned GET of
// baton's copy, to the chat's owner only (another caller's history of the
// same chat id is []); a bad file is refused with nothing written.
func TestChatFiles(t *testing.T) {
	t.Parallel()
	alice, bob := ids.New("alice"), ids.New("bob")
	e := newEnv(t, func(c *operator.Config) { c.Chat = chat.Options{DefaultAgent: "demo"} })
	withFiles(e, files.Policy{})
	chatID := ids.New("chat")
	post := func(user, body string, timeout time.Duration) (int, string) {
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		defer cancel()
		hr, _ := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/chat", strings.NewReader(body))
		hr.Header.Set(userHeader, user)
		hr.Header.Set("Content-Type", "application/json")
		resp, err := e.client.Do(hr)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	request := func(msgID string, parts ...string) string {
		return fmt.Sprintf(`{"id":%q,"messages":[{"id":%q,"role":"user","parts":[%s]}]}`, chatID, msgID, strings.Join(parts, ","))
	}
	img := fmt.Sprintf(`{"type":"file","mediaType":"image/png","url":%q,"filename":"dot.png"}`, dataURLOf("image/png", tinyPNG))
	lying := fmt.Sprintf(`{"type":"file","mediaType":"image/jpeg","url":%q}`, dataURLOf("image/jpeg", tinyPNG))
	html := fmt.Sprintf(`{"type":"file","mediaType":"text/html","url":%q}`, dataURLOf("text/html", []byte("<html>")))
	sid := chat.SessionID(alice, chatID)
	for _, bad := range []string{lying, html} {
		if status, body := post(alice, request("m0", `{"type":"text","text":"Look."}`, bad), 5*time.Second); status != http.StatusUnsupportedMediaType {
			t.Fatalf("a bad file: %d %s, want 415", status, body)
		}
	}
	if _, err := e.store.Head(t.Context(), sid); err == nil || len(e.mem.Bucket.Keys("")) != 0 {
		t.Fatalf("a refused chat message created the session (%v) or stored %v", err, e.mem.Bucket.Keys(""))
	}
	// The answer is the turn's stream, which no runner here starts: the
	// message is recorded before it waits.
	post(alice, request("m1", `{"type":"text","text":"What is this?"}`, img), 500*time.Millisecond)
	var hist []api.ChatMessage
	e.must(http.StatusOK, req{method: "GET", path: "/chat/" + chatID + "/messages", user: alice}).json(t, &hist)
	if len(hist) != 1 || len(hist[0].Parts) != 2 || hist[0].Parts[1].Type != "file" || hist[0].Parts[1].MediaType != "image/png" ||
		hist[0].Parts[1].Filename != "dot.png" || !strings.Contains(hist[0].Parts[1].URL, "files/"+sid+"/") || !strings.Contains(hist[0].Parts[1].URL, "X-Amz-Signature=") {
		t.Fatalf("history %+v", hist)
	}
	var theirs []api.ChatMessage
	e.must(http.StatusOK, req{method: "GET", path: "/chat/" + chatID + "/messages", user: bob}).json(t, &theirs)
	if len(theirs) != 0 {
		t.Fatalf("another caller's history of the chat id: %+v", theirs)
	}
	var up api.Upload
	e.must(http.StatusOK, req{method: "POST", path: "/chat/" + chatID + "/uploads", user: alice,
		body: fmt.Sprintf(`{"mediaType":"image/png","size":100,"sha256":%q}`, strings.Repeat("cd", 32))}).json(t, &up)
	if !strings.Contains(up.URL, "files/"+sid+"/") {
		t.Errorf("the chat's upload goes to %s, not the chat's session", up.URL)
	}
}

// TestChatToolFiles: a tool's output that names a file (stored as the
// runner stores it) is followed, in the chat's stream, by a file chunk
// whose URL is a presigned GET, and in the history by a file part.
func TestChatToolFiles(t *testing.T) {
	t.Parallel()
	alice := ids.New("alice")
	e := newEnv(t, func(c *operator.Config) { c.Chat = chat.Options{DefaultAgent: "demo"} })
	withFiles(e, files.Policy{})
	chatID := ids.New("chat")
	sid := chat.SessionID(alice, chatID)
	if _, err := e.store.Create(t.Context(), sid, alice, "demo"); err != nil {
		t.Fatal(err)
	}
	turn, stream := e.startTurn(sid)
	raw, _ := files.ToolOutput("drawn", files.ToolFile{MediaType: "image/png", Name: "chart.png", Data: tinyPNG})
	out, err := e.store.Files.StoreToolOutput(t.Context(), sid, files.Policy{}, raw)
	if err != nil {
		t.Fatal(err)
	}
	writeStream(t, e, sid, stream, streams.Completed, []parts.Part{{Type: parts.Start, MessageID: turn}, {Type: parts.StartStep},
		{Type: parts.ToolInputAvailable, ToolCallID: "call_1", ToolName: "chart", Input: json.RawMessage(`{}`)},
		{Type: parts.ToolOutputAvailable, ToolCallID: "call_1", Output: out}, {Type: parts.FinishStep}, {Type: parts.Finish}})
	sse := e.must(http.StatusOK, req{method: "GET", path: "/chat/" + chatID + "/stream", user: alice, header: map[string]string{"x-ai-sdk-version": "6"}})
	if !bytes.Contains(sse.body, []byte(`"type":"file"`)) || !bytes.Contains(sse.body, []byte("files/"+sid+"/")) {
		t.Fatalf("the stream has no file chunk for the tool's file:\n%s", sse.body)
	}
	e.append(sid, reducer.Fact{Type: reducer.TurnCompleted, Actor: reducer.Actor{Kind: reducer.ActorAgent, ID: turn}, Turn: turn})
	var hist []api.ChatMessage
	e.must(http.StatusOK, req{method: "GET", path: "/chat/" + chatID + "/messages", user: alice}).json(t, &hist)
	var found bool
	for _, m := range hist {
		for i, p := range m.Parts {
			if p.Type == "file" && m.Role == "assistant" && i > 0 && m.Parts[i-1].Type == "tool-chart" && strings.Contains(p.URL, "files/"+sid+"/") {
				found = true
			}
		}
	}
	if !found {
		t.Fatalf("the history shows no file part after the tool's: %+v", hist)
	}
}
