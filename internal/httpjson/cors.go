package httpjson

import (
	"net/http"
	"slices"
)

// CORS is a CORS policy: the browser origins that may call an API ("*"
// allows any), the methods and request headers a preflight allows, and
// the response headers a browser script may read.
type CORS struct {
	Origins []string
	Methods string // Access-Control-Allow-Methods, and Allow of an OPTIONS without Origin
	Headers string // Access-Control-Allow-Headers
	Expose  string // Access-Control-Expose-Headers
}

// Apply applies the policy to r: a request from an allowed origin gets
// Access-Control-Allow-Origin, a preflight is answered here, and a
// preflight from any other origin is refused with 403. A request without
// Origin (not from a browser on another origin) is served as it is. It
// reports whether the request goes on to its route.
func (c CORS) Apply(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	allowed := origin != "" && (slices.Contains(c.Origins, origin) || slices.Contains(c.Origins, "*"))
	if allowed {
		hd := w.Header()
		hd.Set("Access-Control-Allow-Origin", origin)
		hd.Add("Vary", "Origin")
		hd.Set("Access-Control-Expose-Headers", c.Expose)
	}
	if r.Method != http.MethodOptions {
		return true
	}
	if origin == "" {
		w.Header().Set("Allow", c.Methods)
		w.WriteHeader(http.StatusNoContent)
		return false
	}
	if !allowed {
		Write(w, http.StatusForbidden, ErrorBody{Error: "origin " + Clip(origin) + " is not allowed to call this API"})
		return false
	}
	hd := w.Header()
	hd.Set("Access-Control-Allow-Methods", c.Methods)
	hd.Set("Access-Control-Allow-Headers", c.Headers)
	hd.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return false
}
