package reducer

import (
	"errors"
	"fmt"
	"strings"
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

// maxCron is the longest cron expression CheckCron accepts, in bytes.
const maxCron = 512

// ErrBadCron: a cron expression CheckCron refuses.
var ErrBadCron = errors.New("bad cron expression")

// CheckCron is the check of a new schedule's cron: exactly five fields
// (minute, hour, day of month, month, day of week), read in UTC. It
// refuses what the cron library would also take: descriptors (@every 1s,
// @daily), a CRON_TZ= or TZ= time zone prefix, and a sixth field of
// seconds, each with an error (wrapping ErrBadCron) that names the
// problem.
func CheckCron(expr string) error {
	bad := func(format string, args ...any) error {
		return cronError(fmt.Sprintf("cron %q ", clip(expr)) + fmt.Sprintf(format, args...))
	}
	fields := strings.Fields(expr)
	switch {
	case len(expr) > maxCron:
		return bad("is %d bytes, longer than the %d allowed", len(expr), maxCron)
	case len(fields) == 0:
		return bad("is empty: want five fields (minute hour day-of-month month day-of-week), in UTC")
	case strings.HasPrefix(fields[0], "@"):
		return bad("is a descriptor, which schedules do not take: want five fields (minute hour day-of-month month day-of-week), in UTC")
	case strings.HasPrefix(fields[0], "CRON_TZ=") || strings.HasPrefix(fields[0], "TZ="):
		return bad("names a time zone, which schedules do not take: the five fields are read in UTC")
	case len(fields) == 6:
		return bad("has six fields: seconds are not taken; want five (minute hour day-of-month month day-of-week), in UTC")
	case len(fields) != 5:
		return bad("has %d fields: want five (minute hour day-of-month month day-of-week), in UTC", len(fields))
	}
	if _, err := parseCron(expr); err != nil {
		return cronError(err.Error())
	}
	return nil
}

// cronError is CheckCron's refusal: its message as is, matching ErrBadCron.
type cronError string

func (e cronError) Error() string        { return string(e) }
func (e cronError) Is(target error) bool { return target == ErrBadCron }

// clip shortens a long expression for an error message.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:64] + "…"
}

// parseCron parses a cron expression as the cron library's standard
// parser does. It reads schedules already recorded, which facts written
// before CheckCron may hold with a descriptor or a time zone; a new
// schedule is checked with CheckCron.
func parseCron(expr string) (cron.Schedule, error) {
	s, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, fmt.Errorf("cron %q: %w", expr, err)
	}
	return s, nil
}

// Next is the schedule's first occurrence after From, in UTC; zero when
// Cron does not parse or never occurs.
func (s Schedule) Next() time.Time {
	c, err := parseCron(s.Cron)
	if err != nil {
		return time.Time{}
	}
	return c.Next(s.From.UTC()).UTC()
}

// OccurrenceID is the message ID the occurrence at t posts with: one per
// occurrence, so that it is posted once.
func OccurrenceID(t time.Time) string { return fmt.Sprintf("sched_%d", t.UTC().Unix()) }
