package mcpsdk_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/baton-run/baton/internal/mcp"
	"github.com/baton-run/baton/internal/mcp/mcpsdk"
	"github.com/baton-run/baton/internal/mcp/mcptest"
	"github.com/baton-run/baton/internal/tool"
)

// counting counts the HTTP requests it carries.
type counting struct{ n atomic.Int64 }

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// BenchmarkCall is one MCP tool call against a local server, with the HTTP
// requests it takes (each call connects afresh).
func BenchmarkCall(b *testing.B) {
	srv := mcptest.Start()
	defer srv.Close()
	rt := &counting{}
	d := mcpsdk.Dialer{HTTPClient: &http.Client{Transport: rt}, Getenv: dialer.Getenv}
	tools, err := d.Tools(context.Background(), server(srv.URL))
	if err != nil {
		b.Fatal(err)
	}
	call := tool.Call{ID: "c", Name: mcptest.Lookup, Input: json.RawMessage(`{"path":"/a"}`)}
	rt.n.Store(0)
	b.ResetTimer()
	for b.Loop() {
		if _, err := tools[0].Run(context.Background(), call); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rt.n.Load())/float64(b.N), "requests/call")
}

// BenchmarkList is the listing a turn makes when it starts: the allowed
// tools of one server, with the HTTP requests it takes and the bytes of
// the record the turn keeps of them.
func BenchmarkList(b *testing.B) {
	srv := mcptest.Start()
	defer srv.Close()
	rt := &counting{}
	ts := mcp.Toolset{Dialer: mcpsdk.Dialer{HTTPClient: &http.Client{Transport: rt}, Getenv: dialer.Getenv},
		Servers: []mcp.Server{server(srv.URL)}}
	var listed []tool.Listed
	for b.Loop() {
		var err error
		if listed, err = ts.List(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	rec, err := json.Marshal(listed)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(rt.n.Load())/float64(b.N), "requests/list")
	b.ReportMetric(float64(len(rec)), "record-bytes")
}
