package otel_test

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/traceparent"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/providers/otel"
)

// receiver is an OTLP/HTTP trace receiver: it decodes each
// ExportTraceServiceRequest the exporter posts and keeps its spans.
type receiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	posts int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || r.Header.Get("X-Tenant") != "desk one" {
		http.Error(w, "want a protobuf POST to /v1/traces with the configured headers", http.StatusBadRequest)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(raw, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	rc.posts++
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			rc.spans = append(rc.spans, ss.Spans...)
		}
	}
	rc.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (rc *receiver) received() ([]*tracepb.Span, int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.spans), rc.posts
}

// named gives a scripted model a provider and a name, as a provider's
// model would.
type named struct{ baton.Model }

func (named) Identity() model.Identity { return model.Identity{Provider: "scripted", Name: "script-1"} }

func attr(s *tracepb.Span, key string) *commonpb.AnyValue {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

func str(s *tracepb.Span, key string) string { return attr(s, key).GetStringValue() }
func num(s *tracepb.Span, key string) int64  { return attr(s, key).GetIntValue() }

// exported is tracing configured from the environment as a function's
// would be, exporting to an in-test OTLP receiver; both end with the test.
func exported(t *testing.T) (*receiver, *otel.Tracing) {
	t.Helper()
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_EXPORTER_OTLP_HEADERS": "x-tenant=desk%20one"}
	tr, err := otel.FromEnv(t.Context(), func(k string) string { return env[k] })
	if err != nil || tr == nil {
		t.Fatalf("FromEnv: %v %v", tr, err)
	}
	t.Cleanup(func() { tr.Shutdown(context.Background()) })
	return rc, tr
}

// TestOneTraceAcrossInvocations is the Must show 1: a turn posted
// under a traced request, suspended for an approval, approved, killed
// mid-step and resumed, runs in three invocations; the in-test OTLP
// receiver gets one trace of them: an invoke_agent span per invocation,
// each a child of the request's span; step spans; chat spans with the
// gen_ai.* attributes; execute_tool spans for the approved refund and the
// lookup the kill cut short and the resume redid.
func TestOneTraceAcrossInvocations(t *testing.T) {
	rc, tr := exported(t)

	started := make(chan struct{})
	var once sync.Once
	var s *batontest.Session
	lookup := baton.Func("lookup", "Look an order up.", func(ctx context.Context, in struct {
		Order string `json:"order"`
	}) (string, error) {
		killed := false
		once.Do(func() { killed = true })
		if killed {
			// The process dies here, once the lookup's step is written
			// (past turn.BilledGrace), so the resume redoes the lookup
			// alone.
			for finishedSteps(s.Parts()) < 2 {
				time.Sleep(5 * time.Millisecond)
			}
			close(started)
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "order " + in.Order + ": 250 EUR", nil
	}, baton.Read())
	refund := baton.Func("refund", "Refund an order.", func(context.Context, struct {
		Order string `json:"order"`
	}) (string, error) {
		return "refunded", nil
	}, baton.Write(), baton.Idempotent(), baton.NeedsApproval(baton.Always()))
	script, err := baton.Script([]byte(`{"steps":[
	 {"text":"Refunding.","toolCalls":[{"name":"refund","input":{"order":"A-1"}}]},
	 {"text":"Checking.","toolCalls":[{"name":"lookup","input":{"order":"A-1"}}]},
	 {"text":"Refunded 250 EUR."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var eng *app.App
	kit := batontest.New(t, app.OnBuild(host.Config{
		Agents:       []baton.Agent{{Name: "desk", Model: named{script}, Tools: []baton.Tool{refund, lookup}}},
		Interceptors: []host.Interceptor{tr.Interceptor()},
	}, func(a *app.App) { eng = a }))
	s = kit.Session("desk")
	const request = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ctx := traceparent.With(t.Context(), request)
	if _, err := eng.Sessions.Post(ctx, s.ID, reducer.Actor{Kind: reducer.ActorOperator, ID: batontest.Owner}, "Refund A-1."); err != nil {
		t.Fatal(err)
	}

	if out := s.Run(); out.Kind != batontest.Suspended || out.Cause != reducer.CauseApproval {
		t.Fatalf("first invocation: %+v, want suspended for approval", out)
	}
	if got := s.State().Turn.Trace; got != request {
		t.Fatalf("turn.started recorded trace %q, want the request's %q", got, request)
	}
	s.Approve(s.Pending()[0].ID)
	s.RunKilled(started)
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("third invocation: %+v, want completed", out)
	}

	spans, posts := rc.received()
	t.Logf("%d spans in %d OTLP posts:\n%s", len(spans), posts, tree(spans))
	checkTrace(t, spans, request)
}

func checkTrace(t *testing.T, spans []*tracepb.Span, request string) {
	t.Helper()
	p, _ := traceparent.Parse(request)
	byID := map[string]*tracepb.Span{}
	for _, s := range spans {
		byID[hex.EncodeToString(s.SpanId)] = s
		if !slices.Equal(s.TraceId, p.TraceID[:]) {
			t.Errorf("span %q is in trace %x, want %x", s.Name, s.TraceId, p.TraceID)
		}
	}
	parent := func(s *tracepb.Span) *tracepb.Span { return byID[hex.EncodeToString(s.ParentSpanId)] }
	var invocations []int64
	count := map[string]int{}
	for _, s := range spans {
		count[strings.Fields(s.Name)[0]]++
		switch name := s.Name; {
		case name == "invoke_agent desk":
			invocations = append(invocations, num(s, "baton.invocation"))
			if !slices.Equal(s.ParentSpanId, p.SpanID[:]) {
				t.Errorf("invocation %d's parent is %x, want the request's span %x", num(s, "baton.invocation"), s.ParentSpanId, p.SpanID)
			}
		case name == "step":
			if pa := parent(s); pa == nil || !strings.HasPrefix(pa.Name, "invoke_agent") {
				t.Errorf("step %d is not under an invocation", num(s, "baton.step"))
			}
		case name == "chat script-1":
			if pa := parent(s); pa == nil || pa.Name != "step" || num(pa, "baton.step") != num(s, "baton.step") {
				t.Errorf("chat span of step %d is not under its step", num(s, "baton.step"))
			}
			if str(s, "gen_ai.operation.name") != "chat" || str(s, "gen_ai.request.model") != "script-1" ||
				str(s, "gen_ai.provider.name") != "scripted" || attr(s, "gen_ai.usage.input_tokens") == nil ||
				attr(s, "gen_ai.usage.output_tokens") == nil || len(attr(s, "gen_ai.response.finish_reasons").GetArrayValue().GetValues()) != 1 {
				t.Errorf("chat span lacks gen_ai attributes: %v", s.Attributes)
			}
		case strings.HasPrefix(name, "execute_tool "):
			if pa := parent(s); pa == nil || !strings.HasPrefix(pa.Name, "invoke_agent") {
				t.Errorf("%s is not under an invocation", name)
			}
			if str(s, "gen_ai.tool.name") != strings.TrimPrefix(name, "execute_tool ") || str(s, "gen_ai.tool.call.id") == "" {
				t.Errorf("tool span lacks gen_ai attributes: %v", s.Attributes)
			}
		default:
			t.Errorf("unexpected span %q", name)
		}
	}
	sort.Slice(invocations, func(i, j int) bool { return invocations[i] < invocations[j] })
	if !slices.Equal(invocations, []int64{1, 2, 3}) {
		t.Errorf("invocation spans %v, want 1, 2, 3", invocations)
	}
	// Three steps, one model call each; the refund once, the lookup twice
	// (the kill cut the first short, and the resume ran it again).
	if count["chat"] != 3 || count["step"] != 3 || count["execute_tool"] != 3 {
		t.Errorf("span counts %v, want 3 chat, 3 step, 3 execute_tool", count)
	}
	var lookups []*tracepb.Span
	for _, s := range spans {
		if s.Name == "execute_tool lookup" {
			lookups = append(lookups, s)
		}
	}
	if len(lookups) == 2 && (str(lookups[0], "gen_ai.tool.call.id") != str(lookups[1], "gen_ai.tool.call.id") ||
		num(parent(lookups[0]), "baton.invocation") == num(parent(lookups[1]), "baton.invocation")) {
		t.Errorf("the lookup's two runs are not one call in two invocations")
	}
}

// tree draws spans as a tree, children in start order, with the
// attributes a reader looks for.
func tree(spans []*tracepb.Span) string {
	kids := map[string][]*tracepb.Span{}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[hex.EncodeToString(s.SpanId)] = true
	}
	for _, s := range spans {
		pa := hex.EncodeToString(s.ParentSpanId)
		if !ids[pa] {
			pa = "remote " + pa
		}
		kids[pa] = append(kids[pa], s)
	}
	var b strings.Builder
	var draw func(key string, depth int)
	draw = func(key string, depth int) {
		ks := kids[key]
		sort.Slice(ks, func(i, j int) bool { return ks[i].StartTimeUnixNano < ks[j].StartTimeUnixNano })
		for _, s := range ks {
			fmt.Fprintf(&b, "%s%s%s\n", strings.Repeat("  ", depth), s.Name, brief(s))
			draw(hex.EncodeToString(s.SpanId), depth+1)
		}
	}
	for key := range kids {
		if strings.HasPrefix(key, "remote ") {
			fmt.Fprintf(&b, "trace %x, parent %s\n", kids[key][0].TraceId, key)
			draw(key, 1)
		}
	}
	return b.String()
}

func brief(s *tracepb.Span) string {
	var out []string
	for _, kv := range s.Attributes {
		switch kv.Key {
		case "baton.invocation", "baton.outcome", "baton.cause", "baton.step", "gen_ai.request.model", "gen_ai.usage.input_tokens",
			"gen_ai.usage.output_tokens", "gen_ai.response.finish_reasons", "gen_ai.tool.call.id", "error.type":
			out = append(out, kv.Key+"="+anyString(kv.Value))
		}
	}
	if s.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		out = append(out, "status=error")
	}
	if len(out) == 0 {
		return ""
	}
	return " [" + strings.Join(out, " ") + "]"
}

func anyString(v *commonpb.AnyValue) string {
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.Values {
			parts = append(parts, anyString(e))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return v.String()
}

// TestAMintedTraceHasItsRoot: a turn no traced request posted runs under a
// trace baton minted; its first invocation's span is the trace's root,
// with the ids the turn.started fact records, and the turn's later
// invocation is its child: no span of the trace has a parent the receiver
// never got.
func TestAMintedTraceHasItsRoot(t *testing.T) {
	rc, tr := exported(t)
	refund := baton.Func("refund", "Refund an order.", func(context.Context, struct {
		Order string `json:"order"`
	}) (string, error) {
		return "refunded", nil
	}, baton.Write(), baton.Idempotent(), baton.NeedsApproval(baton.Always()))
	script, err := baton.Script([]byte(`{"steps":[
	 {"text":"Refunding.","toolCalls":[{"name":"refund","input":{"order":"A-1"}}]},
	 {"text":"Refunded."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	kit := batontest.New(t, host.Config{
		Agents:       []baton.Agent{{Name: "desk", Model: named{script}, Tools: []baton.Tool{refund}}},
		Interceptors: []host.Interceptor{tr.Interceptor()},
	})
	s := kit.Session("desk")
	s.Post("Refund A-1.")
	if out := s.Run(); out.Kind != batontest.Suspended {
		t.Fatalf("first invocation: %+v, want suspended", out)
	}
	minted, err := traceparent.Parse(s.State().Turn.Trace)
	if err != nil {
		t.Fatalf("the turn's trace %q: %v", s.State().Turn.Trace, err)
	}
	s.Approve(s.Pending()[0].ID)
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("second invocation: %+v, want completed", out)
	}

	spans, _ := rc.received()
	t.Logf("%d spans:\n%s", len(spans), tree(spans))
	ids := map[string]bool{}
	for _, sp := range spans {
		ids[hex.EncodeToString(sp.SpanId)] = true
		if !slices.Equal(sp.TraceId, minted.TraceID[:]) {
			t.Errorf("span %q is in trace %x, want the turn's %x", sp.Name, sp.TraceId, minted.TraceID)
		}
	}
	var roots []*tracepb.Span
	for _, sp := range spans {
		switch {
		case len(sp.ParentSpanId) == 0:
			roots = append(roots, sp)
		case !ids[hex.EncodeToString(sp.ParentSpanId)]:
			t.Errorf("span %q has parent %x, which no span is", sp.Name, sp.ParentSpanId)
		}
		if sp.Name == "invoke_agent desk" && num(sp, "baton.invocation") == 2 && !slices.Equal(sp.ParentSpanId, minted.SpanID[:]) {
			t.Errorf("invocation 2's parent is %x, want the root %x", sp.ParentSpanId, minted.SpanID)
		}
	}
	if len(roots) != 1 || roots[0].Name != "invoke_agent desk" || num(roots[0], "baton.invocation") != 1 || !slices.Equal(roots[0].SpanId, minted.SpanID[:]) {
		t.Fatalf("roots %v, want invocation 1's span, with the span id %x the turn records", roots, minted.SpanID)
	}
}

// finishedSteps counts the step ends in ps.
func finishedSteps(ps []batontest.Part) int {
	n := 0
	for _, p := range ps {
		if p.Type == parts.FinishStep {
			n++
		}
	}
	return n
}
