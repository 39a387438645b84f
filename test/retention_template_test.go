package test

import (
	"fmt"
	"testing"

	"github.com/baton-run/baton/internal/app"
)

// TestRetentionDaysParameterIsBounded: the template's RetentionDays
// parameter refuses, at deploy time, what the functions would refuse at
// start (app.MaxRetentionDays), instead of deploying functions that fail.
func TestRetentionDaysParameterIsBounded(t *testing.T) {
	t.Parallel()
	p := at(tree(t), "Parameters", "RetentionDays")
	if p == nil {
		t.Fatal("no RetentionDays parameter")
	}
	if got, want := fmt.Sprint(at(p, "MaxValue")), fmt.Sprint(app.MaxRetentionDays); got != want {
		t.Fatalf("RetentionDays MaxValue %s, want %s (app.MaxRetentionDays)", got, want)
	}
	if got := fmt.Sprint(at(p, "MinValue")); got != "0" {
		t.Fatalf("RetentionDays MinValue %s, want 0", got)
	}
}
