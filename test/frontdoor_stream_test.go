package test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/baton-run/baton/internal/chat"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/test/harness"
)

// shortHold is frontLimits with a hold far shorter than the slow agent's
// turn (about 2.4 s), so that every held response ends mid-turn.
func shortHold() harness.Limits {
	l := frontLimits()
	l.Hold = 700 * time.Millisecond
	return l
}

// startTurn creates a session of the slow agent for sub, posts a message
// and returns the session and its turn.
func startTurn(t *testing.T, d *harness.Deployed, sub string) (string, string) {
	t.Helper()
	var s struct{ ID string }
	r := call(t, d, "POST", "/sessions", d.Token(sub), `{"agent":"slow"}`, nil)
	if r.code != http.StatusCreated || json.Unmarshal(r.body, &s) != nil {
		t.Fatalf("create: %v", r)
	}
	if r := call(t, d, "POST", "/sessions/"+s.ID+"/messages", d.Token(sub), `{"text":"weather in three cities"}`, nil); r.code != http.StatusAccepted {
		t.Fatalf("post: %v", r)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for {
		facts, err := d.Store.Facts(ctx, s.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range facts {
			if f.Type == reducer.TurnStarted {
				return s.ID, f.Turn
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("no turn started")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitIdle waits for the session's turn to end.
func waitIdle(t *testing.T, d *harness.Deployed, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		sess, err := d.Store.Load(ctx, id)
		if err == nil && sess.State.Turn == nil && sess.State.Status != reducer.Running {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the turn did not end: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestDeployedTurnStreamResumes: a turn stream held through the Function
// URL ends at the hold, mid-turn, after a whole event; reconnecting with
// Last-Event-ID continues from there, and the events of all the responses
// are the turn's stream, without a gap or a repeat.
func TestDeployedTurnStreamResumes(t *testing.T) {
	t.Parallel()
	d := startDeployed(t, shortHold())
	id, turn := startTurn(t, d, alice)
	var ids, datas []string
	last, responses := "", 0
	for closed := false; !closed; {
		if responses++; responses > 50 {
			t.Fatal("the stream never closed")
		}
		req, _ := http.NewRequestWithContext(t.Context(), "GET", d.URL+"/sessions/"+id+"/turns/"+turn+"/stream", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+d.Token(alice))
		if last != "" {
			req.Header.Set("Last-Event-ID", last)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET stream: %v %v", resp, err)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				last = strings.TrimPrefix(line, "id: ")
				ids = append(ids, last)
			case line == "event: close":
				closed = true
			case strings.HasPrefix(line, "data: ") && !closed:
				datas = append(datas, strings.TrimPrefix(line, "data: "))
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("response %d ended uncleanly: %v", responses, err)
		}
		resp.Body.Close()
	}
	if responses < 2 {
		t.Fatalf("one response held the whole turn: the hold (%v) did not end it", d.Limits.Hold)
	}
	seen := map[string]bool{}
	for _, c := range ids {
		if seen[c] {
			t.Fatalf("event %s repeated across %d responses", c, responses)
		}
		seen[c] = true
	}
	// The whole stream, read from the store, is what the client got.
	page, err := d.Store.ReadStream(t.Context(), id, streamOf(t, d, id, turn), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != len(ids) {
		t.Fatalf("client got %d events over %d responses, the stream holds %d", len(ids), responses, len(page.Entries))
	}
	for i, e := range page.Entries {
		if string(e.Cursor) != ids[i] {
			t.Fatalf("event %d: client got %s, stream has %s (a gap or a reorder)", i, ids[i], e.Cursor)
		}
	}
	t.Logf("%d events over %d responses (hold %v), no gap, no repeat", len(ids), responses, d.Limits.Hold)
}

// streamOf is the stream name of a turn, from its turn.started fact.
func streamOf(t *testing.T, d *harness.Deployed, id, turn string) string {
	t.Helper()
	facts, err := d.Store.Facts(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range facts {
		if f.Type == reducer.TurnStarted && f.Turn == turn {
			return f.Stream
		}
	}
	t.Fatalf("no turn %s", turn)
	return ""
}

// TestDeployedChatHoldEndsResumable: a chat response that reaches the hold
// ends cleanly mid-turn (whole events, no transport error), and
// GET /chat/{id}/stream, through the same door, then serves the turn until
// it ends: the whole reply, nothing missing.
func TestDeployedChatHoldEndsResumable(t *testing.T) {
	t.Parallel()
	d := startDeployed(t, shortHold())
	code, first, err := readChat(t, d, alice, "held-chat-1", "What is the weather in three cities?")
	if err != nil || code != http.StatusOK {
		t.Fatalf("POST /chat: %d, %v (a held response must end cleanly)", code, err)
	}
	if len(first) == 0 || !first[len(first)-1].TurnOpen {
		t.Fatalf("the first response did not end mid-turn: %d events", len(first))
	}
	var text strings.Builder
	for responses := 1; ; responses++ {
		if responses > 50 {
			t.Fatal("the chat never caught up with its turn")
		}
		req, _ := http.NewRequestWithContext(t.Context(), "GET", d.URL+"/chat/held-chat-1/stream", nil)
		req.Header.Set("Authorization", "Bearer "+d.Token(alice))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusNoContent {
			resp.Body.Close()
			break // no open turn: it ended
		}
		sc := bufio.NewScanner(resp.Body)
		text.Reset() // the resumed stream serves the open turn from its start
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			var v struct{ Type, Delta string }
			if ok && json.Unmarshal([]byte(data), &v) == nil && v.Type == "text-delta" {
				text.WriteString(v.Delta)
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("resumed response %d ended uncleanly: %v", responses, err)
		}
		resp.Body.Close()
		if strings.Contains(text.String(), "all mild today") {
			break
		}
	}
	for _, want := range []string{"Checking the weather in Paris first.", "Now Berlin.", "And Rome.", "Paris, Berlin and Rome are all mild today."} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the resumed chat lacks %q: %q", want, text.String())
		}
	}
}

// TestDeployedWritesPerStep measures the durable writes of a turn: stream
// chunks (S3 PUTs) and facts (DynamoDB items) per model step, with a live
// reader on the chat and with none. A reader costs no write: the turn
// writes the same either way.
func TestDeployedWritesPerStep(t *testing.T) {
	t.Parallel()
	d := startDeployed(t, frontLimits())
	const steps = 4
	// With a live reader: the chat.
	if code, _, err := readChat(t, d, alice, "writes-live-1", "weather in three cities"); err != nil || code != http.StatusOK {
		t.Fatalf("chat: %d %v", code, err)
	}
	live := chat.SessionID(alice, "writes-live-1") // the chat's session
	waitIdle(t, d, live)
	// Without: a session nobody watches.
	quiet, _ := startTurn(t, d, alice)
	waitIdle(t, d, quiet)
	count := func(id string) (chunks, facts int) {
		out, err := d.Emulator.Clients.S3.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(d.Resources.Bucket)})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out.Contents {
			if k := aws.ToString(o.Key); strings.Contains(k, id) && strings.HasPrefix(k, "streams/") {
				chunks++
			}
		}
		fs, err := d.Store.Facts(t.Context(), id, 0)
		if err != nil {
			t.Fatal(err)
		}
		return chunks, len(fs)
	}
	lc, lf := count(live)
	qc, qf := count(quiet)
	t.Logf("durable writes for a %d-step turn: live reader %d stream chunks (%.2f/step), %d facts; no reader %d chunks (%.2f/step), %d facts",
		steps, lc, float64(lc)/steps, lf, qc, float64(qc)/steps, qf)
	if lc == 0 || qc == 0 {
		t.Fatalf("no stream chunks found (live %d, quiet %d): the key layout changed?", lc, qc)
	}
	// Each step writes at most its live flushes (the leading and the
	// trailing edge of each burst of model events: the scripted step has
	// two bursts, and the second's trailing edge is its end's), its end,
	// and, for a step whose reads run past turn.BilledGrace, the billed
	// step before their results: 5 per step.
	if lc > 5*steps || qc > 5*steps {
		t.Errorf("more than 5 stream writes per step: live %d, quiet %d for %d steps", lc, qc, steps)
	}
	if diff := lc - qc; diff < -1 || diff > 1 {
		t.Errorf("a live reader changed the turn's writes: %d chunks with, %d without", lc, qc)
	}
}

// TestDeployedLiveLatency measures, through the Function URL door, the
// time from a stream chunk's write to S3 (its LastModified) to its text
// reaching the client: the door's and the chat's polling share of "model
// event → text in the browser". It logs p50 and p99 and asserts nothing
// about time.
func TestDeployedLiveLatency(t *testing.T) {
	t.Parallel()
	if os.Getenv("BATON_MEASURE") == "" {
		t.Skip("set BATON_MEASURE=1 to measure")
	}
	d := startDeployed(t, frontLimits())
	var lat []time.Duration
	for i := range 3 {
		id := fmt.Sprintf("latency-%d", i)
		got := map[string]time.Time{} // delta text → when the client read it
		ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "POST", d.URL+"/chat", strings.NewReader(chatBody(id, "weather")))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+d.Token(alice))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var v struct{ Type, ID, Delta string }
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && json.Unmarshal([]byte(data), &v) == nil && v.Type == "text-delta" {
				got[v.ID+"|"+v.Delta] = time.Now()
			}
		}
		resp.Body.Close()
		cancel()
		out, err := d.Emulator.Clients.S3.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(d.Resources.Bucket), Prefix: aws.String("streams/" + id + "/")})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out.Contents {
			obj, err := d.Emulator.Clients.S3.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(d.Resources.Bucket), Key: o.Key})
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Parts []struct{ Type, ID, Delta string }
			}
			_ = json.NewDecoder(obj.Body).Decode(&doc)
			obj.Body.Close()
			for _, p := range doc.Parts {
				if at, ok := got[p.ID+"|"+p.Delta]; ok && p.Type == "text-delta" {
					lat = append(lat, at.Sub(aws.ToTime(o.LastModified)))
				}
			}
		}
	}
	if len(lat) == 0 {
		t.Fatal("no text deltas matched their chunks")
	}
	slices.Sort(lat)
	t.Logf("chunk written (S3 LastModified) → text at the client, %d deltas: p50 %v, p99 %v, max %v",
		len(lat), lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
}

// TestDeployedEndToEnd: a turn through the Function URL model from message
// to approval to completion, as a browser app on AI SDK 5 drives it: the
// session routes (with CORS), the approval answered through the operator
// route, the turn stream read through the door until it closes.
func TestDeployedEndToEnd(t *testing.T) {
	t.Parallel()
	d := startDeployed(t, frontLimits())
	origin := map[string]string{"Origin": "https://app.example"}
	var s struct{ ID string }
	r := call(t, d, "POST", "/sessions", d.Token(alice), `{"agent":"quick"}`, origin)
	if r.code != http.StatusCreated || json.Unmarshal(r.body, &s) != nil || r.hdr.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Fatalf("create: %v %v", r, r.hdr)
	}
	if r := call(t, d, "POST", "/sessions/"+s.ID+"/messages", d.Token(alice), `{"text":"email the team"}`, origin); r.code != http.StatusAccepted {
		t.Fatalf("post: %v", r)
	}
	var approval string
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for approval == "" {
		var v struct {
			Pending []struct{ ApprovalID string }
		}
		if r := call(t, d, "GET", "/sessions/"+s.ID, d.Token(alice), "", nil); r.code == http.StatusOK && json.Unmarshal(r.body, &v) == nil && len(v.Pending) > 0 {
			approval = v.Pending[0].ApprovalID
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("no approval was requested")
		case <-time.After(50 * time.Millisecond):
		}
	}
	if r := call(t, d, "POST", "/sessions/"+s.ID+"/approvals/"+approval, d.Token(alice), `{"decision":"approve"}`, origin); r.code != http.StatusAccepted || r.hdr.Get("Access-Control-Allow-Origin") == "" {
		t.Fatalf("approve: %v %v", r, r.hdr)
	}
	waitIdle(t, d, s.ID)
	facts, err := d.Store.Facts(t.Context(), s.ID, 0)
	if err != nil || len(facts) == 0 || facts[len(facts)-1].Type != reducer.TurnCompleted {
		t.Fatalf("the turn did not complete: %v %d facts", err, len(facts))
	}
	turn := facts[len(facts)-1].Turn
	req, _ := http.NewRequestWithContext(ctx, "GET", d.URL+"/sessions/"+s.ID+"/turns/"+turn+"/stream", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+d.Token(alice))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %v %v", resp, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var closed, approved bool
	for sc.Scan() {
		closed = closed || sc.Text() == "event: close"
		approved = approved || strings.Contains(sc.Text(), "That is settled")
	}
	if !closed || !approved {
		t.Fatalf("the turn stream: closed %v, holds the answer after the approval %v", closed, approved)
	}
}
