package otel_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/baton-run/baton/providers/otel"
)

// TestExporterEncoding: what the hand-written encoder posts decodes, with
// OTLP's generated types, to the spans the SDK recorded: ids and parent,
// kind, times, every attribute type, events, status codes (OTLP's numbers,
// not the API's), resource and scope.
func TestExporterEncoding(t *testing.T) {
	var got coltracepb.ExportTraceServiceRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		if err := proto.Unmarshal(raw, &got); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	exp := otel.NewExporter(srv.URL+"/v1/traces", nil)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "resume"))))
	tracer := tp.Tracer("scope-x", trace.WithInstrumentationVersion("v9"))
	ctx, parent := tracer.Start(context.Background(), "parent", trace.WithSpanKind(trace.SpanKindClient))
	_, child := tracer.Start(ctx, "child", trace.WithAttributes(
		attribute.String("s", "ü"), attribute.Int64("i", -7), attribute.Bool("b", true), attribute.Float64("f", 1.5),
		attribute.StringSlice("ss", []string{"a", "b"}), attribute.Int64Slice("is", []int64{1, 2}),
		attribute.BoolSlice("bs", []bool{false}), attribute.Float64Slice("fs", []float64{0.25})))
	child.AddEvent("retry", trace.WithAttributes(attribute.Int("try", 2)))
	child.SetStatus(codes.Error, "broke")
	child.End()
	if len(got.ResourceSpans) != 1 {
		t.Fatalf("decoded %d resource spans, want 1", len(got.ResourceSpans))
	}
	rs := got.ResourceSpans[0]
	if kv := rs.Resource.Attributes; len(kv) != 1 || kv[0].Key != "service.name" || kv[0].Value.GetStringValue() != "resume" {
		t.Errorf("resource %v", kv)
	}
	ss := rs.ScopeSpans[0]
	if ss.Scope.Name != "scope-x" || ss.Scope.Version != "v9" || len(ss.Spans) != 1 {
		t.Fatalf("scope %v with %d spans", ss.Scope, len(ss.Spans))
	}
	s := ss.Spans[0]
	pc, cc := parent.SpanContext(), child.SpanContext()
	pid, tid, cid := pc.SpanID(), cc.TraceID(), cc.SpanID()
	if s.Name != "child" || string(s.TraceId) != string(tid[:]) || string(s.SpanId) != string(cid[:]) || string(s.ParentSpanId) != string(pid[:]) ||
		s.Kind != tracepb.Span_SPAN_KIND_INTERNAL || s.StartTimeUnixNano == 0 || s.EndTimeUnixNano < s.StartTimeUnixNano {
		t.Errorf("span %v", s)
	}
	want := map[string]string{"s": `string_value:"ü"`, "i": `int_value:-7`, "b": `bool_value:true`, "f": `double_value:1.5`,
		"ss": `array_value:{values:{string_value:"a"} values:{string_value:"b"}}`, "is": `array_value:{values:{int_value:1} values:{int_value:2}}`,
		"bs": `array_value:{values:{bool_value:false}}`, "fs": `array_value:{values:{double_value:0.25}}`}
	for _, kv := range s.Attributes {
		if w := want[kv.Key]; strings.Join(strings.Fields(kv.Value.String()), " ") != w {
			t.Errorf("attribute %s = %v, want %s", kv.Key, kv.Value, w)
		}
		delete(want, kv.Key)
	}
	if len(want) != 0 {
		t.Errorf("attributes missing: %v", want)
	}
	if len(s.Events) != 1 || s.Events[0].Name != "retry" || s.Events[0].Attributes[0].Value.GetIntValue() != 2 {
		t.Errorf("events %v", s.Events)
	}
	if s.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || s.Status.Message != "broke" {
		t.Errorf("status %v", s.Status)
	}
	parent.SetStatus(codes.Ok, "")
	parent.End()
	if s := got.ResourceSpans[0].ScopeSpans[0].Spans[0]; s.Status.GetCode() != tracepb.Status_STATUS_CODE_OK || s.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("parent: status %v kind %v", s.Status, s.Kind)
	}
}

// TestExporterFromEnv: the endpoint and headers come from the standard
// variables; what baton cannot speak is refused with a clear error; a
// collector's refusal is the export's error.
func TestExporterFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	if on := otel.Enabled(env()); on {
		t.Error("enabled with no endpoint")
	}
	if on := otel.Enabled(env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318", "OTEL_SDK_DISABLED", "true")); on {
		t.Error("enabled with the SDK disabled")
	}
	if tr, err := otel.FromEnv(context.Background(), env()); tr != nil || err != nil {
		t.Errorf("FromEnv with nothing set: %v %v, want off", tr, err)
	}
	for _, bad := range [][]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "localhost:4318"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318", "OTEL_EXPORTER_OTLP_HEADERS", "novalue"},
	} {
		if _, err := otel.ExporterFromEnv(env(bad...)); err == nil {
			t.Errorf("ExporterFromEnv(%q) took it", bad)
		}
	}

	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path+" "+r.Header.Get("Authorization"))
		http.Error(w, "quota exceeded", http.StatusTooManyRequests)
	}))
	defer srv.Close()
	exp, err := otel.ExporterFromEnv(env("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL+"/", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "Authorization=Bearer%20k"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider()
	_, s := tp.Tracer("x").Start(context.Background(), "s")
	s.End()
	ro, ok := s.(sdktrace.ReadOnlySpan)
	if !ok {
		t.Fatal("not a ReadOnlySpan")
	}
	err = exp.ExportSpans(context.Background(), []sdktrace.ReadOnlySpan{ro})
	if err == nil || !strings.Contains(err.Error(), "429") || !strings.Contains(err.Error(), "quota exceeded") {
		t.Errorf("export to a refusing collector: %v", err)
	}
	if len(paths) != 1 || paths[0] != "/v1/traces Bearer k" {
		t.Errorf("posted %q", paths)
	}
	if err := exp.ExportSpans(context.Background(), nil); err != nil || len(paths) != 1 {
		t.Errorf("an empty batch: %v, %d posts", err, len(paths))
	}
}
