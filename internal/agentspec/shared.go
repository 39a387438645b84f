package agentspec

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/baton-run/baton"
	"github.com/baton-run/baton/pkg/reducer"
)

// MaxSystem is the longest system prompt (and compaction prompt) an agent
// may have, in bytes of UTF-8: 256 KiB, some 64k tokens sent with every
// model step. A longer reference belongs in a tool the model calls.
const MaxSystem = 256 << 10

// Shared is what Go agents and an agent file's agents both set and one
// check covers (CheckShared), so that both refuse the same values naming
// the same field.
type Shared struct {
	System string
	// CompactionPrompt is the compaction policy's prompt, if any.
	CompactionPrompt string
	MaxOutputTokens  int
	MaxToolOutput    int
	Children         baton.Children
	Limits           baton.Limits
	Steering         reducer.Steering
	OnChange         reducer.OnChange
}

// CheckShared checks s, calling bad with the field at fault (named as in
// an agent file: "system", "maxOutputTokens", "maxDepth",
// "limits.modelRetry.wakeDelay", "steering", "onChange") and why, for each problem.
func CheckShared(s Shared, bad func(field string, err error)) {
	if err := CheckPrompt(s.System); err != nil {
		bad("system", err)
	}
	if err := CheckPrompt(s.CompactionPrompt); err != nil {
		bad("compaction.prompt", err)
	}
	if s.MaxOutputTokens < 0 {
		bad("maxOutputTokens", errors.New("negative"))
	}
	if s.MaxToolOutput < 0 {
		bad("maxToolOutput", errors.New("negative"))
	}
	if field, err := s.Children.Check(); err != nil {
		bad(field, err)
	}
	if field, err := CheckLimits(s.Limits); err != nil {
		bad(field, err)
	}
	if err := CheckSteering(s.Steering); err != nil {
		bad("steering", err)
	}
	if err := s.OnChange.Check(); err != nil {
		bad("onChange", err)
	}
}

// CheckPrompt checks a system or compaction prompt: valid UTF-8, at most
// MaxSystem bytes.
func CheckPrompt(p string) error {
	switch {
	case len(p) > MaxSystem:
		return fmt.Errorf("%d bytes, longer than the %d allowed", len(p), MaxSystem)
	case !utf8.ValidString(p):
		return errors.New("not valid UTF-8")
	}
	return nil
}

// CheckSteering checks a steering policy: empty (enqueue) or one of
// enqueue, steer, interrupt and reject.
func CheckSteering(s reducer.Steering) error {
	if s == "" || s.Known() {
		return nil
	}
	return fmt.Errorf("%q: want enqueue, steer, interrupt or reject", s)
}
