package turntest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"iter"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/files"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/model"
	pt "github.com/baton-run/baton/internal/provider/providertest"
	"github.com/baton-run/baton/internal/teststack"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/turn"
)

// filesOf is a file store on the package's bucket through c.
func filesOf(c *awsenv.Clients) *files.Store {
	return files.New(c.S3, env.Bucket, s3.NewPresignClient(c.S3))
}

// freshFiles is fresh with a file store.
func freshFiles(agent *turn.Agent) *invocation {
	inv := fresh(agent)
	inv.sessions.Files = filesOf(env.Clients())
	return inv
}

// testPNG is a small PNG image.
func testPNG(t testing.TB) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	for x := range 8 {
		img.Set(x, x, color.RGBA{R: 200, A: 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// testPDF is a PDF of about n bytes.
func testPDF(n int) []byte {
	head := "%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n%"
	tail := "\n%%EOF\n"
	return []byte(head + strings.Repeat("x", max(0, n-len(head)-len(tail))) + tail)
}

func dataURL(mt string, b []byte) string {
	return "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(b)
}

// fileShadow is shadow for a conversation with files: it rebuilds the
// step's input from durable state in a fresh invocation and loads the
// files' bytes from S3 there, as a fresh runner does.
type fileShadow struct {
	model.Model
	session string
	render  model.Model
	errs    []error
}

func (s *fileShadow) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Event, error] {
	msgs, err := rebuildMessages(ctx, s.session)
	if err == nil {
		msgs, err = filesOf(env.Clients()).Loader(s.session).Load(ctx, msgs)
	}
	if err != nil {
		s.errs = append(s.errs, err)
	} else {
		rq := req
		rq.Messages = msgs
		if _, err := pt.Collect(s.render.Stream(ctx, rq)); err != nil {
			s.errs = append(s.errs, err)
		}
	}
	return s.Model.Stream(ctx, req)
}

// imageBlock is how each provider's request spells an image of bytes b.
func imageBlock(provider string, b []byte) string {
	enc := base64.StdEncoding.EncodeToString(b)
	switch provider {
	case "anthropic":
		return `{"source":{"data":"` + enc + `","media_type":"image/png","type":"base64"},"type":"image"}`
	case "openai":
		return `{"image_url":{"url":"data:image/png;base64,` + enc + `"},"type":"image_url"}`
	default:
		return `{"image":{"format":"png","source":{"bytes":"` + enc + `"}}}`
	}
}

// documentBlock is the start of how each provider's request spells a PDF
// of bytes b.
func documentBlock(provider string, b []byte) string {
	enc := base64.StdEncoding.EncodeToString(b)
	switch provider {
	case "anthropic":
		return `{"source":{"data":"` + enc + `","media_type":"application/pdf","type":"base64"},"type":"document"}`
	case "openai":
		return `{"file":{"file_data":"data:application/pdf;base64,` + enc + `","filename":"report.pdf"},"type":"file"}`
	default:
		return `{"document":{"format":"pdf","name":"report","source":{"bytes":"` + enc + `"}}}`
	}
}

// TestFilesOnTheWire sends, on each provider, a message with an image and
// a PDF (data URLs, checked and stored by internal/files): a turn of a
// probe step and a text step, then a second turn. Each request holds the
// image and the PDF as the provider's native blocks (Anthropic image and
// document blocks with base64 sources, OpenAI image_url and file inputs
// with data URLs, Bedrock image and document blocks of bytes), and equals,
// byte for byte, the request rebuilt from durable state in a fresh
// invocation (the facts and snapshot hold the reference, S3 the bytes).
// The facts and the snapshot never hold the bytes.
func TestFilesOnTheWire(t *testing.T) {
	for _, w := range byteWires {
		t.Run(w.name, func(t *testing.T) { filesWire(t, w) })
	}
}

func filesWire(t *testing.T, w byteWire) {
	ctx := ctxT(t)
	img, pdf := testPNG(t), testPDF(3000)
	srv := pt.NewServer(t,
		w.call(t, 1, "call_probe_1", "probe", `{"look": "image"}`),
		w.text(t, 2, "A red diagonal."),
		w.text(t, 3, "Still red."))
	rendered := pt.NewServer(t, w.text(t, 0, "unused"))
	p := &probe{outputs: []string{`{"seen": true}`}}
	invoke := func() (*invocation, *fileShadow) {
		sh := &fileShadow{Model: w.model(t, srv.URL), render: w.model(t, rendered.URL)}
		return freshFiles(p.agent(t, sh)), sh
	}
	a, shA := invoke()
	sid := emptySession(t, a)
	shA.session = sid
	refs, _, err := a.sessions.Files.Ingest(ctx, sid, files.Policy{}, []files.Input{
		{MediaType: "image/png", URL: dataURL("image/png", img), Name: "diagonal.png"},
		{MediaType: "application/pdf", URL: dataURL("application/pdf", pdf), Name: "report.pdf"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.sessions.PostMessage(ctx, sid, teststack.Alice, reducer.Message{Text: "What is in the image?", Files: refs}); err != nil {
		t.Fatal(err)
	}
	if out, err := a.runner.Start(ctx, sid); err != nil || out.Kind != turn.Completed {
		t.Fatalf("turn one: %+v, %v", out, err)
	}
	b, shB := invoke()
	shB.session = sid
	teststack.Post(t, b.sessions, sid, teststack.Load(t, b.sessions, sid), "And now?")
	if out, err := b.runner.Start(ctx, sid); err != nil || out.Kind != turn.Completed {
		t.Fatalf("turn two: %+v, %v", out, err)
	}
	for _, sh := range []*fileShadow{shA, shB} {
		if len(sh.errs) > 0 {
			t.Fatalf("rendering a request from durable state: %v", sh.errs)
		}
	}
	live, again := srv.Requests(), rendered.Requests()
	if len(live) != 3 || len(again) != 3 {
		t.Fatalf("%d requests live, %d rebuilt; want 3 each", len(live), len(again))
	}
	for i := range live {
		if !bytes.Equal(live[i].Body, again[i].Body) {
			t.Errorf("request %d live and rebuilt differ:\nlive:\n%.3000s\nrebuilt:\n%.3000s", i+1, live[i].Body, again[i].Body)
		}
		if !bytes.Contains(live[i].Body, []byte(imageBlock(w.name, img))) {
			t.Errorf("request %d holds no %s image block %.200s…:\n%.3000s", i+1, w.name, imageBlock(w.name, img), live[i].Body)
		}
		if !bytes.Contains(live[i].Body, []byte(documentBlock(w.name, pdf))) {
			t.Errorf("request %d holds no %s document block %.200s…:\n%.3000s", i+1, w.name, documentBlock(w.name, pdf), live[i].Body)
		}
	}
	enc := base64.StdEncoding.EncodeToString(img)
	for _, f := range facts(t, a, sid) {
		if f.Message != nil && len(f.Message.Files) > 0 {
			sum := sha256.Sum256(img)
			if got := f.Message.Files[0]; got.SHA256 != hex.EncodeToString(sum[:]) || got.Size != int64(len(img)) || got.Key != files.Key(sid, got.SHA256) || got.MediaType != "image/png" || got.Name != "diagonal.png" {
				t.Errorf("the fact's file reference: %+v", got)
			}
		}
	}
	if bytes.Contains([]byte(fmt.Sprintf("%+v", facts(t, a, sid))), []byte(enc[:40])) {
		t.Error("a fact holds the image's bytes")
	}
	for _, k := range keysUnder(t, "snapshots/"+sid+"/") {
		o := getObject(t, k)
		if bytes.Contains(o, []byte(enc[:40])) {
			t.Errorf("snapshot %s holds the image's bytes", k)
		}
	}
	if got := keysUnder(t, files.Prefix(sid)); len(got) != 2 {
		t.Errorf("files stored: %v, want the image and the PDF once each", got)
	}
}

// TestPresignedUploadOfALargePDF uploads a 15 MB PDF with the presigned
// PUT a store gives (its signature covers Content-Length, Content-Type
// and x-amz-checksum-sha256), names it in a message by its baton-file URL,
// and runs a turn on Anthropic: the request holds the whole PDF as a
// document block.
func TestPresignedUploadOfALargePDF(t *testing.T) {
	ctx := ctxT(t)
	pdf := testPDF(15 << 20)
	sum := sha256.Sum256(pdf)
	srv := pt.NewServer(t, byteWires[0].text(t, 1, "A long report."))
	inv := freshFiles(demoAgent(t, byteWires[0].model(t, srv.URL)))
	sid := emptySession(t, inv)
	up, err := inv.sessions.Files.PresignUpload(ctx, sid, files.Policy{}, files.Upload{MediaType: "application/pdf", Size: int64(len(pdf)), SHA256: hex.EncodeToString(sum[:]), Name: "report.pdf"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"content-length", "content-type", "x-amz-checksum-sha256"} {
		if !strings.Contains(up.URL, h) {
			t.Errorf("the presigned URL does not sign %s: %s", h, up.URL)
		}
	}
	req, _ := http.NewRequestWithContext(ctx, up.Method, up.URL, bytes.NewReader(pdf))
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
		t.Fatalf("PUT: %s", resp.Status)
	}
	refs, _, err := inv.sessions.Files.Ingest(ctx, sid, files.Policy{}, []files.Input{up.File})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inv.sessions.PostMessage(ctx, sid, teststack.Alice, reducer.Message{Text: "Summarise.", Files: refs}); err != nil {
		t.Fatal(err)
	}
	if out, err := inv.runner.Start(ctx, sid); err != nil || out.Kind != turn.Completed {
		t.Fatalf("turn: %+v, %v", out, err)
	}
	got := srv.Requests()
	if len(got) != 1 || !bytes.Contains(got[0].Body, []byte(documentBlock("anthropic", pdf))) {
		t.Fatalf("the request holds no document block of the 15 MB PDF (%d requests)", len(got))
	}
	t.Logf("a %d-byte PDF uploaded by presigned PUT reached the model in a %d-byte request", len(pdf), len(got[0].Body))
}

func keysUnder(t *testing.T, prefix string) []string {
	t.Helper()
	out, err := env.Clients().S3.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: &env.Bucket, Prefix: &prefix})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, *o.Key)
	}
	return keys
}

func getObject(t *testing.T, key string) []byte {
	t.Helper()
	out, err := env.Clients().S3.GetObject(t.Context(), &s3.GetObjectInput{Bucket: &env.Bucket, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(out.Body)
	return b.Bytes()
}

// emptySession creates a session of agent demo, owned by Alice, with no
// message.
func emptySession(t *testing.T, inv *invocation) string {
	t.Helper()
	id := ids.New("s")
	if _, err := inv.sessions.Create(t.Context(), id, teststack.Alice.ID, "demo"); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestToolFilesOnTheWire: a tool returns an image (baton.WithFiles); the
// runner stores it in S3 and records its reference in the tool's output.
// The next request holds it natively, live and rebuilt byte for byte:
// Anthropic in the tool_result's content, Bedrock in the toolResult's,
// OpenAI in a user message after the tool messages. Neither the stream
// nor the snapshot holds its bytes.
func TestToolFilesOnTheWire(t *testing.T) {
	for _, w := range byteWires {
		t.Run(w.name, func(t *testing.T) { toolFilesWire(t, w) })
	}
}

func toolFilesWire(t *testing.T, w byteWire) {
	ctx := ctxT(t)
	img := testPNG(t)
	out, err := files.ToolOutput(map[string]any{"chart": "drawn"}, files.ToolFile{MediaType: "image/png", Name: "chart.png", Data: img})
	if err != nil {
		t.Fatal(err)
	}
	srv := pt.NewServer(t,
		w.call(t, 1, "call_probe_1", "probe", `{"draw": "chart"}`),
		w.text(t, 2, "A chart."))
	rendered := pt.NewServer(t, w.text(t, 0, "unused"))
	p := &probe{outputs: []string{string(out)}}
	sh := &fileShadow{Model: w.model(t, srv.URL), render: w.model(t, rendered.URL)}
	inv := freshFiles(p.agent(t, sh))
	sid := emptySession(t, inv)
	sh.session = sid
	teststack.Post(t, inv.sessions, sid, teststack.Load(t, inv.sessions, sid), "Draw a chart.")
	if out, err := inv.runner.Start(ctx, sid); err != nil || out.Kind != turn.Completed {
		t.Fatalf("turn: %+v, %v", out, err)
	}
	if len(sh.errs) > 0 {
		t.Fatal(sh.errs)
	}
	live, again := srv.Requests(), rendered.Requests()
	if len(live) != 2 || len(again) != 2 {
		t.Fatalf("%d requests live, %d rebuilt", len(live), len(again))
	}
	for i := range live {
		if !bytes.Equal(live[i].Body, again[i].Body) {
			t.Errorf("request %d live and rebuilt differ:\nlive:\n%.3000s\nrebuilt:\n%.3000s", i+1, live[i].Body, again[i].Body)
		}
	}
	body := live[1].Body
	var want string
	switch w.name {
	case "anthropic":
		want = `"tool_use_id":"call_probe_1","content":[{"text":"{\"chart\":\"drawn\"}","type":"text"},` + imageBlock(w.name, img) + `]`
	case "bedrock":
		want = `"toolResult":{"content":[{"text":"{\"chart\":\"drawn\"}"},` + imageBlock(w.name, img) + `]`
	default:
		want = `"tool_call_id":"call_probe_1","role":"tool"},{"content":[{"text":"The files the tool calls above returned:","type":"text"},` + imageBlock(w.name, img) + `],"role":"user"}`
	}
	if !bytes.Contains(body, []byte(want)) {
		t.Errorf("the request after the tool holds no %s image as the tool's:\nwant %.400s…\nin %.4000s", w.name, want, body)
	}
	enc := base64.StdEncoding.EncodeToString(img)[:40]
	for _, k := range append(keysUnder(t, "streams/"+sid+"/"), keysUnder(t, "snapshots/"+sid+"/")...) {
		if bytes.Contains(getObject(t, k), []byte(enc)) {
			t.Errorf("%s holds the image's bytes", k)
		}
	}
	if got := keysUnder(t, files.Prefix(sid)); len(got) != 1 {
		t.Errorf("files stored: %v, want the chart", got)
	}
}

// TestFileRequestCounts counts what files cost in AWS requests: storing
// a message's two files is two PutObjects; a turn of two steps on them
// reads each once (the invocation keeps what it read), two GetObjects more
// than the same turn without files; a fresh invocation reads them again.
func TestFileRequestCounts(t *testing.T) {
	ctx := ctxT(t)
	w := byteWires[0]
	img, pdf := testPNG(t), testPDF(3000)
	run := func(withFiles bool) (ingest, turn1, turn2 map[string]int64) {
		srv := pt.NewServer(t, w.call(t, 1, "call_probe_1", "probe", `{}`), w.text(t, 2, "Seen."), w.text(t, 3, "Again."))
		p := &probe{outputs: []string{`{"ok":true}`}}
		ctr := &awsenv.Counter{}
		c := awsenv.Counted(env.URL(), ctr)
		ss := teststack.Sessions(c, env)
		ss.Files = filesOf(c)
		runner := &turn.Runner{Sessions: ss, Agents: turn.AgentMap{"demo": p.agent(t, w.model(t, srv.URL))}, Waker: ss.Waker}
		sid := ids.New("s")
		if _, err := ss.Create(ctx, sid, teststack.Alice.ID, "demo"); err != nil {
			t.Fatal(err)
		}
		ctr.Reset()
		msg := reducer.Message{Text: "Look."}
		if withFiles {
			refs, _, err := ss.Files.Ingest(ctx, sid, files.Policy{}, []files.Input{
				{MediaType: "image/png", URL: dataURL("image/png", img)}, {MediaType: "application/pdf", URL: dataURL("application/pdf", pdf)}})
			if err != nil {
				t.Fatal(err)
			}
			msg.Files = refs
		}
		ingest = ctr.Counts()
		if _, err := ss.PostMessage(ctx, sid, teststack.Alice, msg); err != nil {
			t.Fatal(err)
		}
		ctr.Reset()
		if out, err := runner.Start(ctx, sid); err != nil || out.Kind != turn.Completed {
			t.Fatalf("turn: %+v, %v", out, err)
		}
		turn1 = ctr.Counts()
		teststack.Post(t, ss, sid, teststack.Load(t, ss, sid), "Again.")
		ctr.Reset()
		fresh := &turn.Runner{Sessions: ss, Agents: runner.Agents, Waker: ss.Waker}
		if out, err := fresh.Start(ctx, sid); err != nil || out.Kind != turn.Completed {
			t.Fatalf("turn two: %+v, %v", out, err)
		}
		turn2 = ctr.Counts()
		return ingest, turn1, turn2
	}
	fi, f1, f2 := run(true)
	_, p1, p2 := run(false)
	get := "s3:GetObject"
	t.Logf("storing two files: %v; a two-step turn on them: %d GetObjects (%d without files); the next turn in a fresh runner: %d (%d)", fi, f1[get], p1[get], f2[get], p2[get])
	if fi["s3:PutObject"] != 2 || len(fi) != 1 {
		t.Errorf("storing two files made %v, want 2 PutObjects", fi)
	}
	if f1[get]-p1[get] != 2 || f2[get]-p2[get] != 2 {
		t.Errorf("files cost %d and %d GetObjects a turn, want 2 (each file once an invocation)", f1[get]-p1[get], f2[get]-p2[get])
	}
}
