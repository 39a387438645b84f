package turntest_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	pt "github.com/baton-run/baton/internal/provider/providertest"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/turn"
)

// faultWire is one provider as a misbehaving server plays it.
type faultWire struct {
	name string
	// answer is a one-step final answer (finalPieces), as the server
	// streams it; each chunk is one event.
	answer pt.Reply
	model  func(t testing.TB, url string) model.Model
	// status is an error response: an HTTP status with the provider's
	// error body (kind is "server", "overloaded" or "auth").
	status func(code int, kind string) pt.Reply
	// corrupt is the answer with one event that does not decode after the
	// first few.
	corrupt func(answer pt.Reply) pt.Reply
	// authText is what the provider's 401 body says.
	authText string
}

func faultWires(t *testing.T) []faultWire {
	a, o, b := anthropicWire(), openaiWire(), bedrockWire(t)
	return []faultWire{
		{
			name:   "anthropic",
			answer: a.replies[1],
			model:  a.model,
			status: func(code int, kind string) pt.Reply {
				e := map[string][2]string{
					"server":     {"api_error", "Internal server error"},
					"overloaded": {"overloaded_error", "Overloaded"},
					"auth":       {"authentication_error", "invalid x-api-key"},
				}[kind]
				typ, msg := e[0], e[1]
				body, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}, "request_id": "req_011CErr"})
				return pt.Reply{Status: code, Header: http.Header{"Content-Type": {"application/json"}, "Request-Id": {"req_011CErr"}}, Chunks: [][]byte{body}}
			},
			corrupt: func(r pt.Reply) pt.Reply {
				bad := pt.SSE("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Oslo is`)
				return insertChunk(r, 3, bad)
			},
			authText: "invalid x-api-key",
		},
		{
			name:   "openai",
			answer: o.replies[1],
			model:  o.model,
			status: func(code int, kind string) pt.Reply {
				e := map[string]map[string]any{
					"server":     {"message": "The server had an error while processing your request.", "type": "server_error", "param": nil, "code": nil},
					"overloaded": {"message": "The engine is currently overloaded, please try again later", "type": "server_error", "param": nil, "code": nil},
					"auth":       {"message": "Incorrect API key provided: sk-test.", "type": "invalid_request_error", "param": nil, "code": "invalid_api_key"},
				}[kind]
				body, _ := json.Marshal(map[string]any{"error": e})
				return pt.Reply{Status: code, Header: http.Header{"Content-Type": {"application/json"}}, Chunks: [][]byte{body}}
			},
			corrupt: func(r pt.Reply) pt.Reply {
				bad := pt.SSE("", `{"id":"chatcmpl-2a8f5e6d4c3b4a1f8e7d","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Oslo`)
				return insertChunk(r, 2, bad)
			},
			authText: "Incorrect API key provided",
		},
		{
			name:   "bedrock",
			answer: b.replies[1],
			model:  b.model,
			status: func(code int, kind string) pt.Reply {
				typ, msg := "InternalServerException", "The system encountered an unexpected error during processing. Try your request again."
				switch kind {
				case "overloaded":
					typ, msg = "ServiceUnavailableException", "Bedrock is unable to process your request."
				case "auth":
					typ, msg = "UnrecognizedClientException", "The security token included in the request is invalid."
				}
				body, _ := json.Marshal(map[string]string{"message": msg})
				return pt.Reply{Status: code, Header: http.Header{
					"Content-Type":     {"application/json"},
					"X-Amzn-Errortype": {typ + ":http://internal.amazon.com/coral/com.amazon.bedrock/"},
					"X-Amzn-Requestid": {"0f6c3b1e-err"},
				}, Chunks: [][]byte{body}}
			},
			corrupt: func(r pt.Reply) pt.Reply {
				// A frame whose message CRC does not match.
				bad := bytes.Clone(r.Chunks[2])
				bad[len(bad)-1] ^= 0xff
				out := r
				out.Chunks = slices.Concat(r.Chunks[:2], [][]byte{bad}, r.Chunks[3:])
				return out
			},
			authText: "security token included in the request is invalid",
		},
	}
}

func insertChunk(r pt.Reply, at int, c []byte) pt.Reply {
	out := r
	out.Chunks = slices.Concat(r.Chunks[:at], [][]byte{c}, r.Chunks[at:])
	return out
}

// faultLimits redo a step at once (1ms backoff) and flush live, so a cut
// step's parts reach the stream before it is redone.
func faultLimits() turn.Limits {
	return turn.Limits{LiveFlush: time.Millisecond, ModelRetry: model.RetryPolicy{Backoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}}
}

// TestTransientFaultsRedoTheStep: per provider, one 500, one 529, a
// connection dropped before the response, a stream cut after a few events
// and one corrupt event each end in turn.completed, the step redone once,
// and nothing of the cut step kept as a completed step.
func TestTransientFaultsRedoTheStep(t *testing.T) {
	for _, w := range faultWires(t) {
		faults := []struct {
			name  string
			reply pt.Reply
			// partial: the cut try streamed text first, which reached the
			// stream (live flush) and must be marked abandoned.
			partial bool
		}{
			{"500", w.status(500, "server"), false},
			{"529", w.status(529, "overloaded"), false},
			{"dropped before the response", pt.Reply{Drop: true}, false},
			{"stream cut after a few events", pt.Reply{Header: w.answer.Header, Chunks: w.answer.Chunks[:3], Abort: true}, true},
			{"corrupt event", w.corrupt(w.answer), true},
		}
		for _, f := range faults {
			t.Run(w.name+"/"+f.name, func(t *testing.T) {
				ctx := ctxT(t)
				srv := pt.NewServer(t, f.reply, w.answer)
				agent := demoAgent(t, w.model(t, srv.URL))
				agent.Limits = faultLimits()
				inv := fresh(agent)
				id := newSession(t, inv, UserText)
				out, err := inv.runner.Start(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if out.Kind != turn.Completed || out.Steps != 1 || out.Usage.Steps != 1 {
					t.Fatalf("outcome %+v, want completed in 1 step", out)
				}
				if n := len(srv.Requests()); n != 2 {
					t.Fatalf("%d requests, want 2: the step redone once", n)
				}
				if got := types(facts(t, inv, id)); !slices.Equal(got, []reducer.Type{reducer.SessionCreated, reducer.MessageReceived, reducer.TurnStarted, reducer.TurnCompleted}) {
					t.Fatalf("facts %v", got)
				}
				ps := checkOneCleanStep(t, inv, id, out.Turn)
				abandoned := slices.IndexFunc(ps, func(p parts.Part) bool { return p.Type == parts.DataAbandoned })
				if f.partial {
					// The cut try's text reached the stream, then the marker.
					if abandoned < 0 || slices.IndexFunc(ps[:abandoned], func(p parts.Part) bool { return p.Type == parts.TextDelta }) < 0 {
						t.Fatalf("no text of the cut try before a data-abandoned part: %+v", ps)
					}
				} else if abandoned >= 0 {
					t.Fatalf("a data-abandoned part for a try that streamed nothing: %+v", ps)
				}
			})
		}
	}
}

// checkOneCleanStep checks that the turn's stream holds exactly one
// completed step, the final answer, and that the snapshot holds that
// answer once: no part of a cut step was kept.
func checkOneCleanStep(t *testing.T, inv *invocation, id, turnID string) []parts.Part {
	t.Helper()
	ps, closed, err := readParts(ctxT(t), inv, id, turnID)
	if err != nil {
		t.Fatal(err)
	}
	if closed != streams.Completed {
		t.Fatalf("stream %s", closed)
	}
	finished := 0
	for _, p := range ps {
		if p.Type == parts.FinishStep {
			finished++
		}
	}
	tr := conversation.Replay(ps)
	if finished != 1 || len(tr.Steps) != 1 || len(tr.Steps[0].Content) != 1 || tr.Steps[0].Content[0].Text != joined(finalPieces) {
		t.Fatalf("%d finish-step parts, steps %+v; want one step saying %q", finished, tr.Steps, joined(finalPieces))
	}
	sess, err := inv.sessions.Load(ctxT(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if h := sess.History; len(h) != 2 || len(h[1].Content) != 1 || h[1].Content[0].Text != joined(finalPieces) {
		t.Fatalf("history %+v, want the question and the answer once", h)
	}
	return ps
}

// TestPersistentFaultSuspendsThenCompletes: per provider, a server that
// fails for longer than the step's time suspends the turn as
// model-unavailable with a delayed wake; once the server recovers, a
// resume in a fresh invocation completes it.
func TestPersistentFaultSuspendsThenCompletes(t *testing.T) {
	for _, w := range faultWires(t) {
		t.Run(w.name, func(t *testing.T) {
			ctx := ctxT(t)
			srv := pt.NewServer(t, w.answer)
			srv.Down(w.status(500, "server"))
			// The step's time is 2s; each wait is 250-500ms, and the
			// tries would last far longer.
			lim := turn.Limits{Budget: 3 * time.Second, Margin: time.Second, LiveFlush: time.Millisecond,
				ModelRetry: model.RetryPolicy{Attempts: 100, Backoff: 500 * time.Millisecond, MaxBackoff: 500 * time.Millisecond, WakeDelay: 2 * time.Second}}
			agent := demoAgent(t, w.model(t, srv.URL))
			agent.Limits = lim
			a := fresh(agent)
			id := newSession(t, a, UserText)
			out, err := a.runner.Start(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if out.Kind != turn.Suspended || out.Cause != reducer.CauseModelUnavailable || out.Steps != 0 {
				t.Fatalf("Start: %+v, want suspended as model-unavailable", out)
			}
			tries := len(srv.Requests())
			if tries < 2 || tries >= 100 {
				t.Fatalf("%d tries in the step's time, want several and fewer than the 100 allowed", tries)
			}
			fs := facts(t, a, id)
			last := fs[len(fs)-1]
			if last.Type != reducer.TurnSuspended || last.Cause != reducer.CauseModelUnavailable || last.Faults != 1 ||
				last.Wake.Sub(last.Time).Round(time.Second) != 2*time.Second {
				t.Fatalf("last fact %+v, want the first model-unavailable suspension with a 2s wake", last)
			}
			ps, closed, err := readParts(ctx, a, id, out.Turn)
			if err != nil {
				t.Fatal(err)
			}
			if closed != streams.Open || len(conversation.Replay(ps).Steps) != 0 {
				t.Fatalf("stream after the suspension: %s, %d completed steps", closed, len(conversation.Replay(ps).Steps))
			}

			srv.Up()
			agentB := demoAgent(t, w.model(t, srv.URL))
			agentB.Limits = lim
			b := fresh(agentB)
			// The invocation B stands for is the delayed wake's: a fault
			// suspension is not resumed before its wake is due.
			if d := time.Until(last.Wake); d > 0 {
				b.sessions.Now = func() time.Time { return time.Now().Add(d) }
			}
			out2, err := b.runner.Resume(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if out2.Kind != turn.Completed || out2.Steps != 1 || out2.Turn != out.Turn {
				t.Fatalf("Resume: %+v, want completed in 1 step", out2)
			}
			if n := len(srv.Requests()); n != tries+1 {
				t.Fatalf("%d requests, want %d", n, tries+1)
			}
			checkOneCleanStep(t, b, id, out.Turn)
		})
	}
}

// TestAuthFailureFailsAtOnce: per provider, a 401 fails the turn at once as
// turn.failed{model}, with a message that names the credentials.
func TestAuthFailureFailsAtOnce(t *testing.T) {
	for _, w := range faultWires(t) {
		t.Run(w.name, func(t *testing.T) {
			ctx := ctxT(t)
			srv := pt.NewServer(t, w.status(401, "auth"), w.answer)
			agent := demoAgent(t, w.model(t, srv.URL))
			agent.Limits = faultLimits()
			inv := fresh(agent)
			id := newSession(t, inv, UserText)
			out, err := inv.runner.Start(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Fatalf("%d requests, want 1", n)
			}
			if out.Kind != turn.Failed || out.Failure == nil || out.Failure.Kind != reducer.FailModel {
				t.Fatalf("outcome %+v, want failed{model}", out)
			}
			msg := out.Failure.Error
			for _, want := range []string{"refused the credentials", "HTTP 401", w.authText} {
				if !strings.Contains(msg, want) {
					t.Fatalf("failure %q does not say %q", msg, want)
				}
			}
			fs := facts(t, inv, id)
			if last := fs[len(fs)-1]; last.Type != reducer.TurnFailed || last.Failure.Kind != reducer.FailModel || last.Failure.Error != msg {
				t.Fatalf("last fact %+v", last)
			}
			if _, closed, err := readParts(ctx, inv, id, out.Turn); err != nil || closed != streams.Failed {
				t.Fatalf("stream %s, %v", closed, err)
			}
		})
	}
}

func types(fs []reducer.Fact) []reducer.Type {
	out := make([]reducer.Type, len(fs))
	for i, f := range fs {
		out[i] = f.Type
	}
	return out
}
