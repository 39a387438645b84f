package operator

import (
	"github.com/baton-run/baton/internal/idempotency"
	"net/http"
	"slices"
	"strings"

	"github.com/baton-run/baton/internal/chat"
	"github.com/baton-run/baton/internal/console"
	"github.com/baton-run/baton/internal/mcpserve"
)

// routes is the operator API's one table of session routes, each served
// by its route group; each needs the caller's identity. New serves it;
// Routes lists it.
func (g groups) routes() map[string]func(http.ResponseWriter, *http.Request, string) error {
	s, a, c, st := g.sessions, g.answers, g.claims, g.streams
	return map[string]func(http.ResponseWriter, *http.Request, string) error{
		"POST /sessions":                               s.idempotent(s.create, idempotency.ReceiptFirst),
		"GET /sessions":                                s.list,
		"GET /sessions/{id}":                           s.get,
		"DELETE /sessions/{id}":                        s.remove,
		"GET /sessions/{id}/export":                    s.export,
		"POST /sessions/{id}/messages":                 s.idempotent(s.message, idempotency.ReceiptFirst),
		"GET /sessions/{id}/facts":                     s.facts,
		"POST /sessions/{id}/rewind":                   s.idempotent(s.rewind, idempotency.ReceiptFirst),
		"POST /sessions/{id}/fork":                     s.idempotent(s.fork, idempotency.ReceiptFirst),
		streamRoute:                                    st.stream,
		"POST /sessions/{id}/approvals/{approvalId}":   a.idempotent(a.answer, idempotency.WriteFirst),
		"POST /sessions/{id}/cancel":                   a.idempotent(a.cancel, idempotency.ReceiptFirst),
		"POST /sessions/{id}/executions/{executionId}": a.idempotent(a.settle, idempotency.WriteFirst),
		"POST /sessions/{id}/callbacks/{toolCallId}":   a.idempotent(a.completeCall, idempotency.WriteFirst),
		"POST /sessions/{id}/grants/{grantId}/release": c.idempotent(c.release, idempotency.WriteFirst),
		"GET /claims/orphans":                          c.orphans,
		"POST /claims/orphans/{grantId}/release":       c.idempotent(c.releaseOrphan, idempotency.ReceiptFirst),
		"POST /sessions/{id}/limits":                   a.idempotent(a.raise, idempotency.WriteFirst),
		"POST /sessions/{id}/wake":                     a.idempotent(a.setTimer, idempotency.WriteFirst),
		"PUT /sessions/{id}/schedule":                  a.idempotent(a.setSchedule, idempotency.WriteFirst),
		"DELETE /sessions/{id}/schedule":               a.idempotent(a.clearSchedule, idempotency.WriteFirst),
		"POST /sessions/{id}/uploads":                  s.upload,
		"GET /sessions/{id}/files/{sha256}":            s.file,
	}
}

// Route is one route the operator API serves, as a deployment declares it:
// Path in API Gateway's syntax ({id}, and {proxy+} for a whole subtree).
type Route struct {
	Method, Path string
	// Public routes answer without the caller's identity: the web
	// console's static assets, CORS preflights, and the callback routes,
	// whose token is their credential. Every other route
	// answers 401 without one.
	Public bool
}

// Routes returns every route New serves, sorted by path then method: the
// session routes, the chat's (internal/chat), the console's static assets, and
// the CORS preflights of the routes a browser app calls.
func Routes() []Route {
	var out []Route
	add := func(pattern string, public bool) {
		method, path, _ := strings.Cut(pattern, " ")
		out = append(out, Route{Method: method, Path: path, Public: public})
	}
	for p := range (groups{&sessionRoutes{}, &answerRoutes{}, &claimRoutes{}, &streamRoutes{}}).routes() {
		add(p, false)
	}
	for _, p := range chat.Routes() {
		add(p, false)
	}
	for p := range (&callbackRoutes{}).routes() {
		add(p, true)
	}
	for p, public := range mcpserve.Routes() {
		add(p, public)
	}
	for _, p := range []string{
		"GET " + console.Path, "GET " + console.Path + "/{proxy+}",
		"OPTIONS /sessions", "OPTIONS /sessions/{proxy+}", "OPTIONS /chat", "OPTIONS /chat/{proxy+}",
	} {
		add(p, true)
	}
	slices.SortFunc(out, func(x, y Route) int {
		if c := strings.Compare(x.Path, y.Path); c != 0 {
			return c
		}
		return strings.Compare(x.Method, y.Method)
	})
	return out
}
