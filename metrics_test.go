package baton_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/internal/metrics"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
)

// lines is a writer that keeps what it is given, for a test to read.
type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// emfUnits are the units the EMF specification allows.
var emfUnits = map[string]bool{"Seconds": true, "Microseconds": true, "Milliseconds": true, "Bytes": true, "Kilobytes": true,
	"Megabytes": true, "Gigabytes": true, "Terabytes": true, "Bits": true, "Kilobits": true, "Megabits": true, "Gigabits": true,
	"Terabits": true, "Percent": true, "Count": true, "Bytes/Second": true, "Kilobytes/Second": true, "Megabytes/Second": true,
	"Gigabytes/Second": true, "Terabytes/Second": true, "Bits/Second": true, "Kilobits/Second": true, "Megabits/Second": true,
	"Gigabits/Second": true, "Terabits/Second": true, "Count/Second": true, "None": true}

// sample is one metric value of an EMF line, with the line's dimensions.
type sample struct {
	name  string
	value float64
	dims  map[string]string
}

// parseEMF checks every line as the EMF specification says a document
// must be, and returns its samples: a JSON object with _aws.Timestamp (ms)
// and CloudWatchMetrics, each directive with a Namespace, 1 or more
// dimension sets of at most 9 keys, each a string member of the root, and
// at most 100 metrics, each a numeric member of the root with a valid unit.
func parseEMF(t *testing.T, out string) []sample {
	t.Helper()
	var samples []sample
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var root map[string]any
		if err := json.Unmarshal([]byte(line), &root); err != nil {
			t.Fatalf("not a JSON object: %v: %s", err, line)
		}
		var meta struct {
			Timestamp         *int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		}
		raw, _ := json.Marshal(root["_aws"])
		if err := json.Unmarshal(raw, &meta); err != nil || meta.Timestamp == nil || len(meta.CloudWatchMetrics) == 0 {
			t.Fatalf("no _aws.Timestamp and CloudWatchMetrics (%v): %s", err, line)
		}
		if ts := time.UnixMilli(*meta.Timestamp); time.Since(ts) > time.Hour || time.Until(ts) > time.Hour {
			t.Errorf("timestamp %v is not milliseconds of now: %s", ts, line)
		}
		for _, d := range meta.CloudWatchMetrics {
			if d.Namespace != metrics.Namespace || len(d.Dimensions) == 0 || len(d.Metrics) == 0 || len(d.Metrics) > 100 {
				t.Fatalf("directive %+v: want namespace %s, dimension sets, 1 to 100 metrics: %s", d, metrics.Namespace, line)
			}
			dims := map[string]string{}
			for _, set := range d.Dimensions {
				if len(set) > 9 {
					t.Errorf("dimension set %v has more than 9 keys", set)
				}
				for _, k := range set {
					v, ok := root[k].(string)
					if !ok || strings.TrimSpace(v) == "" {
						t.Errorf("dimension %s is not a string member of the root: %s", k, line)
					}
					dims[k] = v
				}
			}
			if dims[metrics.DimFunction] == "" {
				t.Errorf("no Function dimension: %s", line)
			}
			for _, m := range d.Metrics {
				v, ok := root[m.Name].(float64)
				if !ok || math.IsNaN(v) || !emfUnits[m.Unit] {
					t.Errorf("metric %s (unit %q) is not a number with a valid unit: %s", m.Name, m.Unit, line)
				}
				samples = append(samples, sample{m.Name, v, dims})
			}
		}
	}
	return samples
}

// sum adds the samples of a metric whose dimensions include those given,
// and counts them.
func sum(ss []sample, name metrics.Name, dims ...string) (total float64, n int) {
	for _, s := range ss {
		if s.name != string(name) {
			continue
		}
		match := true
		for i := 0; i+1 < len(dims); i += 2 {
			match = match && s.dims[dims[i]] == dims[i+1]
		}
		if match {
			total, n = total+s.value, n+1
		}
	}
	return total, n
}

// TestMetricsOfATurn runs a turn through the kit's stack on kumo with
// metrics on: a read tool's step, then a call that waits for an approval
// (the turn suspends), an operator's answer a minute later, and the resume
// the answer's SQS wake brings (handled as the resume function gets it,
// SentTimestamp and all), to the final answer. Every line the functions
// wrote must be EMF by the specification, and the metrics must agree with
// the facts: the steps and tokens of the turn's usage, one suspension for
// approval, a wait of the approval of that minute, and a wake-to-resume
// time.
func TestMetricsOfATurn(t *testing.T) {
	ctx := context.Background()
	lookups := 0
	lookup := baton.Func("lookup", "Look up an order.", func(_ context.Context, in struct {
		Order string `json:"order"`
	}) (string, error) {
		lookups++
		return "order " + in.Order + ": 250 EUR", nil
	}, baton.Read())
	refund := baton.Func("refund", "Refund an order.", func(_ context.Context, in struct {
		Order string `json:"order"`
	}) (string, error) {
		return "refunded", nil
	}, baton.NeedsApproval())
	desk := baton.Agent{Name: "desk", Tools: []baton.Tool{lookup, refund},
		Price: &baton.Price{InputPerMTok: 3, OutputPerMTok: 15},
		Model: batontest.Script(t, `{"steps":[
		 {"toolCalls":[{"name":"lookup","input":{"order":"A-1"}}]},
		 {"toolCalls":[{"name":"refund","input":{"order":"A-1"}}]},
		 {"text":"Refunded order A-1."}]}`)}
	out := &lines{}
	kit := batontest.New(t, host.Config{Agents: []baton.Agent{desk}, Metrics: out})
	s := kit.Session("desk")
	s.Post("Refund order A-1.")
	if o := s.Run(); o.Cause != reducer.CauseApproval || lookups != 1 {
		t.Fatalf("first run: %+v, %d lookups; want a suspension for approval after one lookup", o, lookups)
	}
	q, queue := sqs.NewFromConfig(kit.AWS), kit.Resources.QueueURL
	drain(ctx, t, q, queue) // the post's wake: the kit ran its turn
	kit.Skip(time.Minute)
	s.Approve(s.Pending()[0].ID)
	msgs := drain(ctx, t, q, queue)
	if len(msgs) == 0 {
		t.Fatal("the answer sent no wake")
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	resp, err := kit.App.ResumeHandler()(rctx, wake.Event(msgs, "arn:aws:sqs:us-east-1:000000000000:wakes", "us-east-1"))
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("resume: %+v, %v", resp, err)
	}
	if st := s.State(); st.Status != reducer.Idle || st.Last != reducer.TurnCompleted {
		t.Fatalf("after the resume: %s, last %s; want the turn completed", st.Status, st.Last)
	}

	var usage reducer.Usage
	for _, f := range s.Facts() {
		if f.Type == reducer.TurnCompleted && f.Usage != nil {
			usage = *f.Usage
		}
	}
	ss := parseEMF(t, out.String())
	want := map[metrics.Name]float64{
		metrics.Steps: float64(usage.Steps), metrics.ModelCalls: float64(usage.Steps),
		metrics.InputTokens: float64(usage.InputTokens), metrics.OutputTokens: float64(usage.OutputTokens),
		metrics.CostMicroUSD: float64(usage.CostMicroUSD),
		metrics.TurnsStarted: 1, metrics.TurnsCompleted: 1, metrics.Resumes: 1, metrics.Suspensions: 1,
		metrics.ApprovalsAnswered: 1,
	}
	if usage.Steps != 3 || usage.InputTokens == 0 || usage.CostMicroUSD == 0 {
		t.Fatalf("the turn's usage %+v: want 3 priced steps", usage)
	}
	for name, v := range want {
		if got, _ := sum(ss, name, metrics.DimAgent, "desk"); got != v {
			t.Errorf("%s = %v, want %v (the facts')", name, got, v)
		}
	}
	if n, _ := sum(ss, metrics.Suspensions, metrics.DimCause, string(reducer.CauseApproval)); n != 1 {
		t.Errorf("suspensions for approval = %v, want 1", n)
	}
	if n, _ := sum(ss, metrics.ToolCalls, metrics.DimTool, "lookup"); n != 1 {
		t.Errorf("lookup calls = %v, want 1", n)
	}
	if n, _ := sum(ss, metrics.ToolCalls, metrics.DimTool, "refund"); n != 1 {
		t.Errorf("refund calls = %v, want 1", n)
	}
	if w, n := sum(ss, metrics.ApprovalWait, metrics.DimDecision, string(reducer.Approve)); n != 1 || w < float64(time.Minute/time.Millisecond) {
		t.Errorf("approval wait = %v ms in %d samples, want one of at least the minute skipped", w, n)
	}
	if w, n := sum(ss, metrics.WakeToResume); n != 1 || w < 0 {
		t.Errorf("wake to resume = %v ms in %d samples, want one, not negative", w, n)
	}
	for _, name := range []metrics.Name{metrics.StepLatency, metrics.ModelLatency, metrics.TimeToFirstToken, metrics.ToolLatency} {
		if v, n := sum(ss, name); n == 0 || v < 0 {
			t.Errorf("%s: %v in %d samples, want some, not negative", name, v, n)
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("EMF lines:\n%s", out)
	}
}

// drain receives and deletes every message in the queue, with its system
// attributes, as the event source mapping would hand them to the function.
func drain(ctx context.Context, t *testing.T, q *sqs.Client, url string) []sqstypes.Message {
	t.Helper()
	var all []sqstypes.Message
	for {
		r, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) == 0 {
			return all
		}
		for _, m := range r.Messages {
			if _, err := q.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
		all = append(all, r.Messages...)
	}
}

// TestMetricsOfAReapAndDroppedWakes: a turn whose invocation dies in a
// tool is reaped by the tick, which counts it in its report's line (Reaps)
// as the fact counts a suspension for its lease; and SQS records the
// resume worker cannot use (a body that is no wake, a wake for a session
// that does not exist) are counted as dropped, by reason.
func TestMetricsOfAReapAndDroppedWakes(t *testing.T) {
	ctx := context.Background()
	started := make(chan struct{})
	var once sync.Once
	slow := baton.Func("slow", "Look slowly.", func(ctx context.Context, _ struct{}) (string, error) {
		first := false
		once.Do(func() { first = true })
		if first {
			close(started)
			<-ctx.Done() // the invocation dies here
			return "", ctx.Err()
		}
		return "found", nil
	}, baton.Read())
	out := &lines{}
	kit := batontest.New(t, host.Config{Metrics: out, Agents: []baton.Agent{{Name: "looker", Tools: []baton.Tool{slow},
		Model: batontest.Script(t, `{"steps":[{"toolCalls":[{"name":"slow","input":{}}]},{"text":"Found."}]}`)}}})
	s := kit.Session("looker")
	s.Post("Look.")
	s.RunKilled(started)
	if rep := kit.Tick(); rep.Reaped != 1 {
		t.Fatalf("tick = %+v, want one turn reaped", rep)
	}
	ev := wake.Event(nil, "arn:aws:sqs:us-east-1:000000000000:wakes", "us-east-1")
	ev.Records = append(ev.Records,
		events.SQSMessage{MessageId: "m1", Body: `not a wake`},
		events.SQSMessage{MessageId: "m2", Body: `{"session":"s_gone","reason":"message"}`})
	if resp, err := kit.App.ResumeHandler()(ctx, ev); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("resume = %+v, %v; want both records dropped", resp, err)
	}

	ss := parseEMF(t, out.String())
	if v, n := sum(ss, metrics.Reaps); v != 1 || n != 1 {
		t.Errorf("reaps = %v in %d tick lines, want 1 in 1", v, n)
	}
	if v, _ := sum(ss, metrics.Suspensions, metrics.DimCause, string(reducer.CauseLease), metrics.DimAgent, "looker"); v != 1 {
		t.Errorf("suspensions for the lease = %v, want 1", v)
	}
	for _, reason := range []string{"invalid", "unknown-session"} {
		if v, _ := sum(ss, metrics.WakesDropped, metrics.DimReason, reason); v != 1 {
			t.Errorf("wakes dropped as %s = %v, want 1", reason, v)
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("EMF lines:\n%s", out)
	}
}
