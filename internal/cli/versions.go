package cli

import (
	"github.com/baton-run/baton/pkg/reducer"
)

// Versions in `baton show`: the policy a turn runs under when it resumes
// on a changed agent, and the calls a deploy made stale.

// onChangeText is what the version line adds for a turn under policy p:
// nothing for continue on an unchanged agent; otherwise the policy and
// what it did.
func onChangeText(p reducer.OnChange, changed bool, started, latest string) string {
	switch {
	case p == reducer.OnChangePin && latest != "" && latest == started:
		return "; policy pin: runs on build " + started
	case p == reducer.OnChangePin:
		return "; policy pin (build " + started + ")"
	case p == reducer.OnChangeFail:
		return "; policy fail"
	case changed:
		return "; policy continue: runs on the new definition"
	}
	return ""
}

// staleText says what became of stale call c.
func staleText(c reducer.Stale) string {
	switch c.Cause {
	case reducer.StaleRemoved:
		return "its tool is gone since the deploy; not run, the model got: " + c.Detail
	case reducer.StaleSchema:
		return "its input no longer fits the tool's schema; not run, the model got: " + c.Detail
	case reducer.StaleChanged:
		return "its tool changed since it was approved; " + c.Detail
	}
	return c.Cause + ": " + c.Detail
}
