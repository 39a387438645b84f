package reducer

import (
	"slices"

	"github.com/baton-run/baton/internal/traceparent"
)

// Appliers for the session's own facts: creation, messages and the schedule.

// applySessionCreated checks and folds a fact of type SessionCreated.
func (s sessionRules) applySessionCreated(f Fact) error {
	if s.LastSeq != 0 {
		return s.illegal(f, "session already created")
	}
	if f.Agent == "" {
		return s.illegal(f, "no agent")
	}
	s.Agent, s.Owner, s.Created, s.Status = f.Agent, f.Owner, f.Time, Idle
	if f.Parent != nil {
		p := *f.Parent
		s.Parent = &p
	}
	return nil
}

// applyMessageReceived checks and folds a fact of type MessageReceived.
func (s sessionRules) applyMessageReceived(f Fact) error {
	if f.Message == nil || f.Message.ID == "" {
		return s.illegal(f, "no message")
	}
	m := *f.Message
	if m.Trace != "" && !traceparent.Valid(m.Trace) {
		return s.illegal(f, "message trace %q is not a traceparent", m.Trace)
	}
	switch d := m.Delivery; {
	case d == "" || d == SteerEnqueue:
		s.Inbox = append(s.Inbox, m)
	case d == SteerReject:
		return s.illegal(f, "a rejected message is not received")
	case !d.Known():
		return s.illegal(f, "unknown delivery %q", d)
	case s.Turn == nil:
		return s.illegal(f, "delivery %s needs an open turn", d)
	case d == SteerSteer:
		s.Turn.Steer = append(s.Turn.Steer, m)
	case d == SteerInterrupt:
		s.Inbox = append(s.Inbox, m)
		s.Turn.Interrupt = true
	}
	return nil
}

// applyMessageSteered checks and folds a fact of type MessageSteered.
func (s sessionRules) applyMessageSteered(f Fact) error {
	if err := s.needTurn(f); err != nil {
		return err
	}
	if s.Status != Running {
		return s.illegal(f, "only a running turn delivers messages")
	}
	if len(f.Steered) == 0 {
		return s.illegal(f, "no message named")
	}
	for _, id := range f.Steered {
		i := slices.IndexFunc(s.Turn.Steer, func(m Message) bool { return m.ID == id })
		if i < 0 {
			return s.illegal(f, "message %q is not waiting to be steered", id)
		}
		s.Turn.Steered = append(s.Turn.Steered, s.Turn.Steer[i])
		s.Turn.Steer = slices.Delete(s.Turn.Steer, i, i+1)
	}
	return nil
}

// applyScheduleSet checks and folds a fact of type ScheduleSet.
func (s sessionRules) applyScheduleSet(f Fact) error {
	if f.Schedule == nil || f.Schedule.Text == "" {
		return s.illegal(f, "no schedule or no text")
	}
	if _, err := parseCron(f.Schedule.Cron); err != nil {
		return s.illegal(f, "%v", err)
	}
	sc := *f.Schedule
	sc.From = f.Time
	s.Schedule = &sc
	return nil
}

// applyUsageRecorded checks and folds a fact of type UsageRecorded: usage
// of a turn that ended before it could count it.
func (s sessionRules) applyUsageRecorded(f Fact) error {
	switch {
	case f.Turn == "" || f.Usage == nil || *f.Usage == (Usage{}):
		return s.illegal(f, "no turn or no usage")
	case s.Turn != nil && s.Turn.ID == f.Turn:
		return s.illegal(f, "the open turn records its usage as it suspends or ends")
	}
	s.Usage = s.Usage.Add(*f.Usage)
	return nil
}

// applyScheduleCleared checks and folds a fact of type ScheduleCleared.
func (s sessionRules) applyScheduleCleared(f Fact) error {
	if s.Schedule == nil {
		return s.illegal(f, "no schedule to clear")
	}
	s.Schedule = nil
	return nil
}

// applyScheduleFired checks and folds a fact of type ScheduleFired.
func (s sessionRules) applyScheduleFired(f Fact) error {
	if s.Schedule == nil {
		return s.illegal(f, "no schedule to fire")
	}
	if f.Wake.IsZero() || !f.Wake.Equal(s.Schedule.Next()) {
		return s.illegal(f, "occurrence %v is not the schedule's next", f.Wake)
	}
	// Occurrences missed while busy collapse into this one.
	s.Schedule.From = f.Time
	return nil
}
