package operator_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/operator"
)

// TestScheduleTakesOnlyWhatAMessageMay sets schedules whose text a message
// may not have (over 100 KiB, blank) or whose cron is not five fields in
// UTC (a descriptor, a time zone prefix, a seconds field): each is a 400
// naming the problem, and nothing is written; the text limit itself and a
// plain five-field cron are taken.
func TestScheduleTakesOnlyWhatAMessageMay(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	alice := ids.New("alice")
	s := e.create(alice)
	path := "/sessions/" + s.ID + "/schedule"
	body := func(cron, text string) string {
		b, err := json.Marshal(api.ScheduleRequest{Cron: cron, Text: text})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	before := len(e.facts(s.ID))
	for _, c := range []struct {
		name, cron, text, msg string
	}{
		{"text of 150 KB", "0 9 * * *", strings.Repeat("x", 150_000), "longer than the 102400 allowed"},
		{"text of 500 KB", "0 9 * * *", strings.Repeat("x", 500_000), "longer than the 102400 allowed"},
		{"text one byte over", "0 9 * * *", strings.Repeat("x", operator.MaxText+1), "longer than the 102400 allowed"},
		{"blank text", "0 9 * * *", " \n\t ", "must not be blank"},
		{"@every", "@every 1s", "hi", "descriptor"},
		{"@daily", "@daily", "hi", "descriptor"},
		{"CRON_TZ", "CRON_TZ=Europe/Paris 0 9 * * *", "hi", "time zone"},
		{"TZ", "TZ=America/New_York 0 9 * * *", "hi", "time zone"},
		{"seconds", "0 0 9 * * *", "hi", "six fields"},
		{"four fields", "0 9 * *", "hi", "4 fields"},
		{"empty cron", "  ", "hi", "empty"},
		{"long cron", strings.Repeat("1,", 300) + "1 * * * *", "hi", "longer than the 512 allowed"},
		{"out of range", "61 9 * * *", "hi", "61"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := e.do(req{method: "PUT", path: path, user: alice, body: body(c.cron, c.text)})
			if got.status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400; body %.200s", got.status, got.body)
			}
			if msg := got.errorMessage(t); !strings.Contains(msg, c.msg) {
				t.Errorf("error %q, want it to say %q", msg, c.msg)
			}
		})
	}
	if n := len(e.facts(s.ID)); n != before {
		t.Fatalf("refused schedules wrote %d facts", n-before)
	}
	var got api.Session
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
	if got.Schedule != nil {
		t.Fatalf("refused schedules left %+v", got.Schedule)
	}

	longest := strings.Repeat("y", operator.MaxText)
	e.must(http.StatusAccepted, req{method: "PUT", path: path, user: alice, body: body("*/5 * * * *", longest)})
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: alice}).json(t, &got)
	if got.Schedule == nil || got.Schedule.Cron != "*/5 * * * *" || len(got.Schedule.Text) != operator.MaxText {
		t.Fatalf("schedule at the text limit: %+v", got.Schedule)
	}
}
