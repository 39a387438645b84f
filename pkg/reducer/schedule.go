package reducer

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule is a session's standing order: at each occurrence of Cron (a
// standard five-field expression, in UTC) the tick posts Text as a message.
type Schedule struct {
	Cron string `json:"cron"`
	Text string `json:"text"`
	// From is when the schedule was set or last fired; the next occurrence
	// is the first after it.
	From time.Time `json:"from,omitzero"`
}

// ParseCron checks a standard five-field cron expression.
func ParseCron(expr string) (cron.Schedule, error) {
	s, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, fmt.Errorf("cron %q: %w", expr, err)
	}
	return s, nil
}

// Next is the schedule's first occurrence after From, in UTC; zero when
// Cron does not parse or never occurs.
func (s Schedule) Next() time.Time {
	c, err := ParseCron(s.Cron)
	if err != nil {
		return time.Time{}
	}
	return c.Next(s.From.UTC()).UTC()
}

// OccurrenceID is the message ID the occurrence at t posts with: one per
// occurrence, so that it is posted once.
func OccurrenceID(t time.Time) string { return fmt.Sprintf("sched_%d", t.UTC().Unix()) }
