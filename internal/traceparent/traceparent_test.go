package traceparent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/baton-run/baton/internal/traceparent"
)

func TestParse(t *testing.T) {
	good := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	p, err := traceparent.Parse(good)
	if err != nil || !p.Sampled() || p.String() != good {
		t.Fatalf("Parse(%q) = %v, %v", good, p, err)
	}
	if p, err := traceparent.Parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-later"); err != nil || p.Sampled() {
		t.Errorf("a later version with more fields: %v %v", p, err)
	}
	for _, bad := range []string{
		"",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
	} {
		if _, err := traceparent.Parse(bad); !errors.Is(err, traceparent.ErrInvalid) {
			t.Errorf("Parse(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestNewAndContext(t *testing.T) {
	a, b := traceparent.New(), traceparent.New()
	pa, err := traceparent.Parse(a)
	if err != nil || !pa.Sampled() || a == b {
		t.Fatalf("New: %q %q %v", a, b, err)
	}
	ctx := traceparent.With(context.Background(), "not a traceparent")
	if got := traceparent.From(ctx); got != "" {
		t.Errorf("an invalid traceparent was carried: %q", got)
	}
	if got := traceparent.From(traceparent.With(ctx, a)); got != a {
		t.Errorf("From = %q, want %q", got, a)
	}
}
