package otel

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Exporter sends spans over OTLP/HTTP, as protobuf (http/protobuf), one
// POST per batch. It is the OTLP exporter without the SDK's (whose
// dependencies, grpc among them, would triple the resume bootstrap): no
// retries, since a span that does not reach the collector before the
// flush's deadline costs the trace a span, never the turn.
type Exporter struct {
	url     string
	headers http.Header
	client  *http.Client
}

var _ sdktrace.SpanExporter = (*Exporter)(nil)

// NewExporter posts to url (a collector's /v1/traces) with headers.
func NewExporter(url string, headers map[string]string) *Exporter {
	h := http.Header{}
	for k, v := range headers {
		h.Set(k, v)
	}
	h.Set("Content-Type", "application/x-protobuf")
	return &Exporter{url: url, headers: h, client: &http.Client{}}
}

// ExporterFromEnv is the Exporter the standard variables configure:
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the URL as is) or
// OTEL_EXPORTER_OTLP_ENDPOINT (with /v1/traces after it), and the headers
// of OTEL_EXPORTER_OTLP_HEADERS and OTEL_EXPORTER_OTLP_TRACES_HEADERS
// (key=value pairs, comma-separated, URL-encoded). A protocol other than
// http/protobuf, or an endpoint that is not an http(s) URL, is an error.
func ExporterFromEnv(getenv func(string) string) (*Exporter, error) {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := getenv(v); p != "" && p != "http/protobuf" {
			return nil, fmt.Errorf("otel: %s=%s: baton exports http/protobuf only", v, p)
		}
	}
	endpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if endpoint == "" {
		if base := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); base != "" {
			endpoint = strings.TrimSuffix(base, "/") + "/v1/traces"
		}
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("otel: OTLP endpoint %q is not an http(s) URL", endpoint)
	}
	headers := map[string]string{}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		if err := parseHeaders(getenv(v), headers); err != nil {
			return nil, fmt.Errorf("otel: %s: %w", v, err)
		}
	}
	return NewExporter(endpoint, headers), nil
}

// parseHeaders adds the key=value pairs of s (W3C Baggage-like, as the
// OTLP exporter specification writes them) to into.
func parseHeaders(s string, into map[string]string) error {
	for pair := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		key, kerr := url.PathUnescape(strings.TrimSpace(k))
		val, verr := url.PathUnescape(strings.TrimSpace(v))
		if !ok || key == "" || kerr != nil || verr != nil {
			return fmt.Errorf("%q is not key=value", pair)
		}
		into[key] = val
	}
	return nil
}

// ExportSpans posts spans as one ExportTraceServiceRequest.
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(request(spans)))
	if err != nil {
		return fmt.Errorf("otel: export: %w", err)
	}
	req.Header = e.headers.Clone()
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("otel: export %d spans: %w", len(spans), err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("otel: export %d spans: %s: %s", len(spans), resp.Status, bytes.TrimSpace(body))
	}
	return nil
}

// Shutdown ends the exporter; there is nothing to release.
func (e *Exporter) Shutdown(context.Context) error { return nil }
