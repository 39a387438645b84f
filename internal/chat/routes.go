package chat

import (
	"maps"
	"slices"

	"github.com/baton-run/baton/internal/httpjson"
)

// routes is the chat's one route table: every route needs the caller's
// identity. New serves it, and Routes lists it for the deployment's
// template (test/template_test.go checks template.yaml against it).
func (h *handler) routes() map[string]httpjson.Handler {
	return map[string]httpjson.Handler{
		"POST /chat":              h.post,
		"GET /chat/{id}/stream":   h.resume,
		"POST /chat/{id}/stop":    h.stop,
		"GET /chat/{id}/messages": h.messages,
		"POST /chat/{id}/uploads": h.upload,
	}
}

// Routes returns the chat's route patterns ("POST /chat", ...), sorted.
// Each needs the caller's identity; CORS preflights (OPTIONS) are answered
// for every path besides.
func Routes() []string { return slices.Sorted(maps.Keys((&handler{}).routes())) }
