package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/pkg/reducer"
)

// TestNilRecords: a nil Recorder (metrics off) records nothing and wraps
// nothing, and New without a writer is nil.
func TestNilRecords(t *testing.T) {
	var r *Recorder
	r.Tick(1, 2, 3, 4)
	r.WakeDropped("x")
	r.WakesRetried(1)
	r.Facts(context.Background(), reducer.State{}, []reducer.Fact{{Type: reducer.TurnStarted}})
	ic := r.Interceptor(nil)
	if ic.Model != nil || ic.Tool != nil || ic.Step != nil || ic.Facts != nil || ic.Streams != nil {
		t.Error("a nil recorder's interceptor wraps calls")
	}
	if New(nil, "f") != nil {
		t.Error("New without a writer is not nil")
	}
}

// TestLine: a line is one JSON object with the dimensions as strings (a
// value CloudWatch would refuse is made printable ASCII, a blank one
// named), the metric a number, and a key dimension set for a keyed metric.
func TestLine(t *testing.T) {
	var b bytes.Buffer
	r := New(&b, "fn \"x\"")
	r.Now = func() time.Time { return time.UnixMilli(1700000000123) }
	r.emit("dé\\sk", " ", Value{Suspensions, 1})
	r.emit("", "", Value{Steps, 2}, Value{StepLatency, 1.23456})
	got := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := []string{
		`{"_aws":{"Timestamp":1700000000123,"CloudWatchMetrics":[{"Namespace":"Baton","Dimensions":[["Function"],["Function","Agent"],["Function","Cause"]],"Metrics":[{"Name":"Suspensions","Unit":"Count"}]}]},"Function":"fn__x_","Agent":"d___sk","Cause":"none","Suspensions":1}`,
		`{"_aws":{"Timestamp":1700000000123,"CloudWatchMetrics":[{"Namespace":"Baton","Dimensions":[["Function"]],"Metrics":[{"Name":"Steps","Unit":"Count"},{"Name":"StepLatency","Unit":"Milliseconds"}]}]},"Function":"fn__x_","Steps":2,"StepLatency":1.235}`,
	}
	if len(got) != len(want) {
		t.Fatalf("lines:\n%s", b.String())
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d\n got %s\nwant %s", i, got[i], want[i])
		}
		if !json.Valid([]byte(got[i])) {
			t.Errorf("line %d is not JSON", i)
		}
	}
}

// TestNames: every metric is listed once, with a CloudWatch unit.
func TestNames(t *testing.T) {
	seen := map[Name]bool{}
	for _, n := range Names() {
		if seen[n] || n == "" {
			t.Errorf("%q listed twice or blank", n)
		}
		seen[n] = true
		if u := n.Unit(); u != Count && u != Milliseconds && u != None {
			t.Errorf("%s: unit %q", n, u)
		}
		if len(Names()) > maxPerLine {
			t.Error("more metrics than one EMF directive may hold")
		}
	}
}
