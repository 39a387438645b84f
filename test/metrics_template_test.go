package test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/metrics"
	"github.com/baton-run/baton/internal/provision"
)

// dashboardMetric is one metric a dashboard widget or an alarm reads.
type dashboardMetric struct {
	where, namespace, name string
	dims                   []string // the dimension keys it names
}

// subVar is a ${...} variable of a Fn::Sub string.
var subVar = regexp.MustCompile(`\$\{[^}]+\}`)

// searchExpr is a SEARCH expression's schema and metric name.
var searchExpr = regexp.MustCompile(`SEARCH\('\{([^}]*)\} MetricName="([^"]+)"`)

// dashboardMetrics decodes the dashboard's body (its Fn::Sub variables
// made plain strings) and lists the metrics its widgets read, from metric
// arrays and from SEARCH expressions.
func dashboardMetrics(t *testing.T, tr map[string]any) []dashboardMetric {
	t.Helper()
	body, _ := at(tr, "Resources", "Dashboard", "Properties", "DashboardBody", "Fn::Sub").(string)
	if body == "" {
		t.Fatal("Dashboard has no DashboardBody !Sub string")
	}
	var dash struct {
		Widgets []struct {
			Properties struct {
				Title   string
				Metrics [][]any
			}
		}
	}
	if err := json.Unmarshal([]byte(subVar.ReplaceAllString(body, "x")), &dash); err != nil {
		t.Fatalf("the dashboard body is not JSON: %v", err)
	}
	var out []dashboardMetric
	for _, w := range dash.Widgets {
		for _, m := range w.Properties.Metrics {
			if len(m) == 0 {
				continue
			}
			if e, ok := m[0].(map[string]any); ok {
				expr, _ := e["expression"].(string)
				sm := searchExpr.FindStringSubmatch(expr)
				if sm == nil {
					t.Errorf("%s: expression %q is no SEARCH of a metric", w.Properties.Title, expr)
					continue
				}
				schema := strings.Split(sm[1], ",")
				out = append(out, dashboardMetric{w.Properties.Title, schema[0], sm[2], schema[1:]})
				continue
			}
			var strs []string
			for _, v := range m {
				if s, ok := v.(string); ok {
					strs = append(strs, s)
				}
			}
			if len(strs) < 2 {
				t.Errorf("%s: metric %v has no namespace and name", w.Properties.Title, m)
				continue
			}
			var dims []string
			for i := 2; i+1 < len(strs); i += 2 {
				dims = append(dims, strs[i])
			}
			out = append(out, dashboardMetric{w.Properties.Title, strs[0], strs[1], dims})
		}
	}
	return out
}

// alarmMetrics lists the metrics the alarms read, alone or in metric math.
func alarmMetrics(tr map[string]any) []dashboardMetric {
	var out []dashboardMetric
	dimKeys := func(v any) []string {
		var keys []string
		for _, d := range asList(v) {
			if k, ok := at(d, "Name").(string); ok {
				keys = append(keys, k)
			}
		}
		return keys
	}
	for id, a := range resourcesOfType(tr, "AWS::CloudWatch::Alarm") {
		if ns, ok := at(a, "Properties", "Namespace").(string); ok {
			name, _ := at(a, "Properties", "MetricName").(string)
			out = append(out, dashboardMetric{id, ns, name, dimKeys(at(a, "Properties", "Dimensions"))})
		}
		for _, q := range asList(at(a, "Properties", "Metrics")) {
			m := at(q, "MetricStat", "Metric")
			if m == nil {
				continue
			}
			ns, _ := at(m, "Namespace").(string)
			name, _ := at(m, "MetricName").(string)
			out = append(out, dashboardMetric{id, ns, name, dimKeys(at(m, "Dimensions"))})
		}
	}
	return out
}

// TestDashboardNamesWhatTheCodeEmits: the template's dashboard and alarms
// (parsed by goformation, and read from the template's tree) name only
// metrics of the Baton namespace that internal/metrics emits, by the dimensions
// it publishes them with (Function; Function and the metric's key), and
// the dashboard shows the operator's metrics: steps, model latency and
// time to first token, tokens and cost, suspensions by cause, failures by
// kind, wake to resume, approval wait, reaps and the DLQ. Alarms watch the
// DLQ's depth, the failure rate, reaps, and Lambda and DynamoDB throttling.
func TestDashboardNamesWhatTheCodeEmits(t *testing.T) {
	t.Parallel()
	tmpl, err := provision.Parse(baton.Template())
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := tmpl.Resources["Dashboard"]; !ok || r.AWSCloudFormationType() != "AWS::CloudWatch::Dashboard" {
		t.Fatalf("no AWS::CloudWatch::Dashboard named Dashboard")
	}
	tr := tree(t)
	emitted := metrics.Names()
	var shown []string
	all := append(dashboardMetrics(t, tr), alarmMetrics(tr)...)
	for _, m := range all {
		if m.namespace != metrics.Namespace {
			continue
		}
		name := metrics.Name(m.name)
		if !slices.Contains(emitted, name) {
			t.Errorf("%s: %s/%s is not a metric internal/metrics emits", m.where, m.namespace, m.name)
			continue
		}
		want := [][]string{{metrics.DimFunction}, {metrics.DimFunction, metrics.DimAgent}}
		if k := name.Key(); k != "" {
			want = append(want, []string{metrics.DimFunction, k})
		}
		if !slices.ContainsFunc(want, func(w []string) bool { return slices.Equal(w, m.dims) }) {
			t.Errorf("%s: %s by %v: the code publishes it by %v", m.where, m.name, m.dims, want)
		}
		shown = append(shown, m.name)
	}
	for _, n := range []metrics.Name{metrics.Steps, metrics.StepLatency, metrics.ModelLatency, metrics.TimeToFirstToken,
		metrics.InputTokens, metrics.OutputTokens, metrics.CostMicroUSD, metrics.Suspensions, metrics.Failures,
		metrics.WakeToResume, metrics.ApprovalWait, metrics.Reaps, metrics.WakesDropped} {
		if !slices.Contains(shown, string(n)) {
			t.Errorf("the dashboard does not show %s", n)
		}
	}

	alarms := map[string]string{} // what each alarm reads: namespace/name of its metrics
	for _, m := range alarmMetrics(tr) {
		alarms[m.where] += m.namespace + "/" + m.name + " "
	}
	for _, want := range []string{"AWS/SQS/ApproximateNumberOfMessagesVisible", "Baton/Failures", "Baton/TurnsCompleted",
		"Baton/Reaps", "AWS/Lambda/Throttles", "AWS/DynamoDB/ThrottledRequests"} {
		found := false
		for _, reads := range alarms {
			found = found || strings.Contains(reads, want+" ")
		}
		if !found {
			t.Errorf("no alarm reads %s (alarms: %v)", want, alarms)
		}
	}
	if q := at(tr, "Resources", "WakeDLQDepthAlarm", "Properties", "Dimensions"); !strings.Contains(jsonString(q), "WakeDLQ") {
		t.Errorf("the DLQ alarm watches %s, not WakeDLQ", jsonString(q))
	}
}
