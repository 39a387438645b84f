package provider

import "net/http"

// SDKOptions are how an HTTP SDK (anthropic-sdk-go, openai-go) spells the
// client options every such provider sets, O being its request option.
type SDKOptions[O any] struct {
	NoRetries  O
	APIKey     func(string) O
	BaseURL    func(string) O
	HTTPClient func(*http.Client) O
}

// For is the client options of a provider's config: the SDK's own retries
// off first (the turn runner redoes a failed step under the agent's
// model.RetryPolicy, so a fault that persists can become a suspension),
// then the key, base URL and HTTP client of those that are set, then
// extra.
func (s SDKOptions[O]) For(key, baseURL string, hc *http.Client, extra []O) []O {
	opts := []O{s.NoRetries}
	if key != "" {
		opts = append(opts, s.APIKey(key))
	}
	if baseURL != "" {
		opts = append(opts, s.BaseURL(baseURL))
	}
	if hc != nil {
		opts = append(opts, s.HTTPClient(hc))
	}
	return append(opts, extra...)
}
