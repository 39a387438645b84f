package test

// Cancel and delete a running turn through the deployed path: the real
// bootstraps, the operator API behind API Gateway, SQS wakes and the tick.
// The turn's model is an OpenAI-compatible server in this process that
// counts its requests, and every step calls a read tool on the crash
// trials' tool server, which records every call.
//
//	go test ./test/ -run CancelDelete -v

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/aws/aws-lambda-go/events"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/test/harness"
)

// The fake model's agents, told apart by their system prompts.
const (
	lookerSystem = "You look things up."
	bossSystem   = "You delegate the looking up."
	fakeKeyEnv   = "BATON_TEST_FAKE_OPENAI_KEY"
)

// fakeModel is an OpenAI-compatible chat completions server. It answers
// the looker's every request with a call of the read tool "lookup" after
// think, and the boss's with a call of its child agent "looker" (once it
// has the call's result, with a final text). It records when each request came, by
// agent.
type fakeModel struct {
	srv   *httptest.Server
	think time.Duration

	mu    sync.Mutex
	calls map[string][]time.Time
}

func newFakeModel(t *testing.T, think time.Duration) *fakeModel {
	fm := &fakeModel{think: think, calls: map[string][]time.Time{}}
	fm.srv = httptest.NewServer(http.HandlerFunc(fm.serve))
	t.Cleanup(fm.srv.Close)
	return fm
}

func fakeChunk(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741569952,"model":"fake","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
}

const fakeUsage = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741569952,"model":"fake","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`

func (fm *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	var body bytes.Buffer
	_, _ = body.ReadFrom(r.Body)
	agent := "looker"
	if bytes.Contains(body.Bytes(), []byte(bossSystem)) {
		agent = "boss"
	}
	fm.mu.Lock()
	fm.calls[agent] = append(fm.calls[agent], time.Now())
	n := len(fm.calls[agent])
	fm.mu.Unlock()
	select {
	case <-time.After(fm.think):
	case <-r.Context().Done():
		return
	}
	call := func(name, args string) string {
		return fakeChunk(fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_%d","type":"function","function":{"name":%q,"arguments":%q}}]}`, n, name, args), "")
	}
	var datas []string
	switch {
	case agent == "looker":
		datas = []string{call("lookup", `{"ref":"r"}`), fakeChunk(`{}`, "tool_calls")}
	case !bytes.Contains(body.Bytes(), []byte(`"role":"tool"`)):
		datas = []string{call("looker", `{"task":"look it up"}`), fakeChunk(`{}`, "tool_calls")}
	default:
		datas = []string{fakeChunk(`{"role":"assistant","content":"done"}`, ""), fakeChunk(`{}`, "stop")}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, d := range append(datas, fakeUsage, "[DONE]") {
		fmt.Fprintf(w, "data: %s\n\n", d)
	}
}

// since counts agent's requests that came after t.
func (fm *fakeModel) since(agent string, t time.Time) int {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	n := 0
	for _, at := range fm.calls[agent] {
		if at.After(t) {
			n++
		}
	}
	return n
}

// writeCancelDeleteAgents writes the looker (every step a read) and the
// boss (which hands the looking up to a looker child) on fm and ts.
func writeCancelDeleteAgents(t *testing.T, fm *fakeModel, ts *toolServer) string {
	t.Helper()
	lim := agents.Limits{Budget: "4s", Margin: "200ms", LeaseGrace: "100ms", MaxStepsPerInvocation: 200, MaxStepsPerTurn: 2000}
	schema := json.RawMessage(`{"type":"object","properties":{"ref":{"type":"string"}},"required":["ref"]}`)
	model := func(system string) agents.Config {
		return agents.Config{Provider: "openai", Model: "fake", BaseURL: fm.srv.URL, APIKeyEnv: fakeKeyEnv, System: system, Limits: lim}
	}
	looker := model(lookerSystem)
	looker.Tools = []agents.ToolRef{{Name: "lookup", Decl: &agents.Decl{Name: "lookup", Kind: "http", Description: "Look something up.",
		Schema: schema, Effect: "read", URL: ts.url("lookup"), Timeout: "5s"}}}
	boss := model(bossSystem)
	boss.Agents = []string{"looker"}
	return writeAgentsFile(t, t.TempDir(), agents.File{Agents: map[string]agents.Config{"looker": looker, "boss": boss}})
}

// toolCallsSince counts the tool server's calls for session id that
// arrived after t.
func toolCallsSince(ts *toolServer, id string, t time.Time) int {
	n := 0
	for _, c := range ts.snapshot() {
		if strings.HasPrefix(c.EnvKey, id+"/") && c.At.After(t) {
			n++
		}
	}
	return n
}

// leftOf lists what of session id is in the stack's table (items of its
// partition but its tombstone) and bucket (objects under its prefixes).
func (s *stack) leftOf(id string) (items, objects []string) {
	s.t.Helper()
	c := s.emu.Clients
	out, err := c.DynamoDB.Query(s.ctx, &dynamodb.QueryInput{TableName: aws.String(s.res.Table),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: id}}})
	if err != nil {
		s.t.Fatal(err)
	}
	for _, it := range out.Items {
		if sk := it["sk"].(*types.AttributeValueMemberN).Value; sk != "-2" {
			items = append(items, id+"/"+sk)
		}
	}
	for _, prefix := range []string{"streams/" + id + "/", "snapshots/" + id + "/"} {
		lo, err := c.S3.ListObjectsV2(s.ctx, &s3.ListObjectsV2Input{Bucket: aws.String(s.res.Bucket), Prefix: aws.String(prefix)})
		if err != nil {
			s.t.Fatal(err)
		}
		for _, o := range lo.Contents {
			objects = append(objects, aws.ToString(o.Key))
		}
	}
	return items, objects
}

// waitGone fires the tick, once a second, until nothing of ids is left
// but their purged tombstones, for up to 30 seconds, and returns what is
// left then.
func (s *stack) waitGone(ids ...string) []string {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	st := dynamo.New(s.emu.Clients.DynamoDB, s.res.Table)
	for {
		var left []string
		for _, id := range ids {
			items, objects := s.leftOf(id)
			left = append(append(left, items...), objects...)
			if t, err := st.Tombstone(s.ctx, id); err != nil || !t.Purged {
				left = append(left, id+": tombstone not purged")
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(time.Second)
		s.fireTick()
	}
}

// waitToolCalls waits for session id to have made n tool calls.
func waitToolCalls(t *testing.T, ts *toolServer, id string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for toolCallsSince(ts, id, time.Time{}) < n {
		if time.Now().After(deadline) {
			t.Fatalf("session %s made fewer than %d tool calls in 20s", id, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCancelDeleteStopsTheRunningTurn: a turn whose every step calls a
// read tool runs; while the model answers a step, an operator cancels it
// and deletes the session, with 0, 50 ms or 1 s between the two, or with
// the cancel's wake held until after the delete. From the cancel's answer on, the invocation that ran
// the turn calls neither the model nor the tool again, and once its lease
// has passed the tick finishes the delete: nothing of the session is left
// in the table or the bucket but its purged tombstone. The same for a
// parent whose child session runs such a turn, cancelled and deleted
// together.
func TestCancelDeleteStopsTheRunningTurn(t *testing.T) {
	t.Parallel()
	// A model call takes a second; the cancel lands in one.
	fm := newFakeModel(t, time.Second)
	ts := newToolServer(t)
	ts.begin(20*time.Millisecond, "", 0)
	s := newStack(t, stackConfig{agents: writeCancelDeleteAgents(t, fm, ts), timeout: 5 * time.Minute,
		env: map[string]string{fakeKeyEnv: "fake-key"}})
	type variant struct {
		name     string
		gap      time.Duration
		holdWake bool
		family   bool
	}
	for _, v := range []variant{{name: "0ms"}, {name: "50ms", gap: 50 * time.Millisecond}, {name: "1s", gap: time.Second},
		{name: "before the cancel's wake", holdWake: true}, {name: "family", family: true}, {name: "family 1s", gap: time.Second, family: true}} {
		t.Run(v.name, func(t *testing.T) {
			agent, looker := "looker", ""
			if v.family {
				agent = "boss"
			}
			id := s.createSession(alice, agent)
			s.post(alice, id, "Look it up.")
			looker = id
			if v.family {
				facts := s.waitFacts(id, "the child started", 20*time.Second, func(fs []reducer.Fact) bool {
					return len(ofType(fs, reducer.ChildStarted)) > 0
				})
				looker = ofType(facts, reducer.ChildStarted)[0].Child.ID
			}
			waitToolCalls(t, ts, looker, 2)
			time.Sleep(300 * time.Millisecond) // into the next model call
			var held <-chan sqstypes.Message
			if v.holdWake {
				held = s.pump.intercept(func(w wake.Wake) bool { return w.Session == id && w.Reason == wake.Cancelled })
			}
			if r := s.do("POST", "/sessions/"+id+"/cancel", alice, `{"reason":"stop"}`, nil); r.code/100 != 2 {
				t.Fatalf("cancel: %v", r)
			}
			cancelled := time.Now()
			time.Sleep(v.gap)
			if r := s.do("DELETE", "/sessions/"+id, alice, "", nil); r.code != http.StatusNoContent {
				t.Fatalf("delete: %v", r)
			}
			deleted := time.Now()
			if v.holdWake {
				s.deliverHeld(t, held)
			}
			ids := []string{id}
			if v.family {
				ids = append(ids, looker)
			}
			left := s.waitGone(ids...)
			gone := time.Now()
			models, tools := fm.since("looker", cancelled)+fm.since("boss", cancelled), toolCallsSince(ts, looker, cancelled)
			t.Logf("after the cancel: %d model calls, %d tool calls; after the delete: %d and %d; %d objects or items left %v after the delete",
				models, tools, fm.since("looker", deleted)+fm.since("boss", deleted), toolCallsSince(ts, looker, deleted), len(left), gone.Sub(deleted).Round(time.Millisecond))
			if models != 0 || tools != 0 {
				t.Errorf("after the cancel: %d model calls and %d tool calls, want none", models, tools)
			}
			if len(left) != 0 {
				t.Errorf("left of the deleted session(s): %v", left)
			}
		})
	}
}

// deliverHeld waits for the wake held, hands it to the resume function
// and checks that it is dropped, not failed.
func (s *stack) deliverHeld(t *testing.T, held <-chan sqstypes.Message) {
	t.Helper()
	var msg sqstypes.Message
	select {
	case msg = <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("no cancel wake within 20s")
	}
	payload, err := json.Marshal(harness.SQSEvent([]sqstypes.Message{msg}, s.pump.arn, harness.Region))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(s.ctx, resumeTimeout)
	defer cancel()
	out, err := s.resume.Load().Invoke(ctx, payload)
	if err != nil {
		t.Fatalf("deliver the held wake: %v %s", err, out)
	}
	var resp events.SQSEventResponse
	if err := json.Unmarshal(out, &resp); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("the held wake after the delete: %s, %v; want it dropped", out, err)
	}
}
