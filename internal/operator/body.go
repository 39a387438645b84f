package operator

import (
	"mime"
	"net/http"
	"strings"

	"github.com/baton-run/baton/internal/httpjson"
)

// decode reads the request body, at most max bytes, and decodes it as one
// JSON object into dst, refusing unknown fields and anything after the
// object. An empty body is accepted, leaving dst as it is, only when
// optional.
func decode(w http.ResponseWriter, r *http.Request, max int64, dst any, optional bool) error {
	body, err := httpjson.ReadBody(w, r, max)
	if err != nil {
		return err
	}
	ct := r.Header.Get("Content-Type")
	if len(body) == 0 && (optional || ct == "") {
		if optional {
			return nil
		}
		return httpjson.Refuse(http.StatusBadRequest, "request body is required: a JSON object")
	}
	if err := checkJSONType(ct); err != nil {
		return err
	}
	if len(body) == 0 {
		return httpjson.Refuse(http.StatusBadRequest, "request body is required: a JSON object")
	}
	return httpjson.DecodeObject(body, dst, true)
}

// checkJSONType accepts application/json, with parameters, in UTF-8.
func checkJSONType(ct string) error {
	if ct == "" {
		return httpjson.Refuse(http.StatusUnsupportedMediaType, "Content-Type must be application/json")
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return httpjson.Refuse(http.StatusUnsupportedMediaType, "Content-Type must be application/json, not %q", ct)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return httpjson.Refuse(http.StatusUnsupportedMediaType, "request body must be UTF-8, not charset %q", cs)
	}
	return nil
}
