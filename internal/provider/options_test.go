package provider

import (
	"net/http"
	"slices"
	"testing"
)

// TestSDKOptionsFor: retries off first, then only the settings that are
// set, in order, then the extra options.
func TestSDKOptionsFor(t *testing.T) {
	s := SDKOptions[string]{
		NoRetries:  "retries=0",
		APIKey:     func(k string) string { return "key=" + k },
		BaseURL:    func(u string) string { return "base=" + u },
		HTTPClient: func(*http.Client) string { return "http" },
	}
	if got, want := s.For("k", "u", &http.Client{}, []string{"x"}), []string{"retries=0", "key=k", "base=u", "http", "x"}; !slices.Equal(got, want) {
		t.Errorf("all set: %v, want %v", got, want)
	}
	if got, want := s.For("", "", nil, nil), []string{"retries=0"}; !slices.Equal(got, want) {
		t.Errorf("none set: %v, want %v", got, want)
	}
}
