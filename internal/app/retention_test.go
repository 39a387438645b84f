package app_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/app"
)

// TestRetentionDaysIsBounded: BATON_RETENTION_DAYS past MaxRetentionDays
// is refused at start, naming the variable and the bound, instead of
// overflowing the retention: 213504 days wrapped round to 25 minutes (the
// sweep would delete every session idle for half an hour) and 106752 went
// negative (retention silently off). Up to the bound, the retention is the
// days asked for.
func TestRetentionDaysIsBounded(t *testing.T) {
	env := func(days string) (app.Resources, error) {
		m := map[string]string{app.EnvTable: "t", app.EnvBucket: "b", app.EnvQueueURL: "q", app.EnvRetentionDays: days}
		return app.EnvFrom(func(k string) string { return m[k] })
	}
	for _, days := range []string{"213504", "106752", strconv.Itoa(app.MaxRetentionDays + 1), "9223372036854775807", "-1", "7.5", "1e3"} {
		e, err := env(days)
		if err == nil {
			t.Errorf("%s days: retention %v, want an error", days, e.Retention())
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, app.EnvRetentionDays) || !strings.Contains(msg, strconv.Itoa(app.MaxRetentionDays)) {
			t.Errorf("%s days: %v, want the variable and the bound named", days, err)
		}
	}
	for _, days := range []int{0, 1, 30, app.MaxRetentionDays} {
		e, err := env(strconv.Itoa(days))
		if err != nil || e.Retention() != time.Duration(days)*24*time.Hour || e.Retention() < 0 {
			t.Errorf("%d days: retention %v, %v", days, e.Retention(), err)
		}
	}
}
