package mcpserve_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/mcpserve"
)

func TestSelect(t *testing.T) {
	all := []string{"desk", "helper", "ops"}
	for spec, want := range map[string][]string{"": nil, " ": nil, "*": all, "helper": {"helper"}, "ops, desk,ops": {"ops", "desk"}} {
		got, err := mcpserve.Select(spec, all)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("Select(%q) = %v, %v; want %v", spec, got, err, want)
		}
	}
	if _, err := mcpserve.Select("desk,nobody", all); err == nil || !strings.Contains(err.Error(), `"nobody"`) {
		t.Errorf("an unknown agent: %v, want an error naming it", err)
	}
}
