package chat

import (
	"net/http"
	"slices"

	"github.com/baton-run/baton/pkg/httpjson"
)

// cors applies the CORS policy: a request from an allowed origin gets
// Access-Control-Allow-Origin, a preflight is answered here, and a
// preflight from any other origin is refused with 403. A request without
// Origin (not from a browser on another origin) is served as it is. It
// reports whether the request goes on to its route.
func (h *handler) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	allowed := origin != "" && (slices.Contains(h.AllowedOrigins, origin) || slices.Contains(h.AllowedOrigins, "*"))
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
		w.Header().Set("Allow", "GET, POST, OPTIONS")
		w.WriteHeader(http.StatusNoContent)
		return false
	}
	if !allowed {
		httpjson.Write(w, http.StatusForbidden, httpjson.ErrorBody{Error: "origin " + httpjson.Clip(origin) + " is not allowed to call the chat endpoint"})
		return false
	}
	hd := w.Header()
	hd.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
	hd.Set("Access-Control-Allow-Headers", "Content-Type, Authorization, "+VersionHeader+", X-Baton-Operator")
	hd.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return false
}
