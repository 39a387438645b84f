package chat

import (
	"net/http"
	"slices"

	"github.com/baton-run/baton/internal/httpjson"
)

// corsMethods are the methods a browser app may use, on the chat's routes
// and on the operator routes it calls besides (AI SDK 5 answers approvals
// through POST /sessions/{id}/approvals/{approvalId}).
const corsMethods = "GET, POST, PUT, DELETE, OPTIONS"

func (h *handler) cors(w http.ResponseWriter, r *http.Request) bool { return h.CORS(w, r) }

// CORS applies the CORS policy of AllowedOrigins (BATON_CHAT_ORIGINS) to
// r: a request from an allowed origin gets Access-Control-Allow-Origin, a
// preflight is answered here, and a preflight from any other origin is
// refused with 403. A request without Origin (not from a browser on
// another origin) is served as it is. It reports whether the request goes
// on to its route. The operator API applies the same policy to its routes.
func (o Options) CORS(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	allowed := origin != "" && (slices.Contains(o.AllowedOrigins, origin) || slices.Contains(o.AllowedOrigins, "*"))
	if allowed {
		hd := w.Header()
		hd.Set("Access-Control-Allow-Origin", origin)
		hd.Add("Vary", "Origin")
		hd.Set("Access-Control-Expose-Headers", "X-Vercel-AI-UI-Message-Stream")
	}
	if r.Method != http.MethodOptions {
		return true
	}
	if origin == "" {
		w.Header().Set("Allow", corsMethods)
		w.WriteHeader(http.StatusNoContent)
		return false
	}
	if !allowed {
		httpjson.Write(w, http.StatusForbidden, httpjson.ErrorBody{Error: "origin " + httpjson.Clip(origin) + " is not allowed to call this API"})
		return false
	}
	hd := w.Header()
	hd.Set("Access-Control-Allow-Methods", corsMethods)
	hd.Set("Access-Control-Allow-Headers", "Content-Type, Authorization, Idempotency-Key, "+VersionHeader+", X-Baton-Operator, traceparent")
	hd.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return false
}
