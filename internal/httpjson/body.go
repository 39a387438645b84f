package httpjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"unicode/utf8"
)

// DecodeObject decodes body, a request's, as one JSON object into dst,
// refusing (400) a body that is not UTF-8, is not an object, does not
// decode, or has anything after the object; strict refuses unknown fields
// too.
func DecodeObject(body []byte, dst any, strict bool) error {
	if !utf8.Valid(body) {
		return Refuse(http.StatusBadRequest, "request body is not valid UTF-8")
	}
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return Refuse(http.StatusBadRequest, "request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(dst); err != nil {
		return Refuse(http.StatusBadRequest, "invalid request body: %s", DescribeJSONError(err))
	}
	if err := dec.Decode(&json.RawMessage{}); !errors.Is(err, io.EOF) {
		return Refuse(http.StatusBadRequest, "invalid request body: unexpected data after the JSON object")
	}
	return nil
}

// ReadBody reads the request body, refusing one larger than max bytes
// with 413.
func ReadBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		if tooBig, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, Refuse(http.StatusRequestEntityTooLarge, "request body is larger than %d bytes", tooBig.Limit)
		}
		return nil, Refuse(http.StatusBadRequest, "cannot read the request body")
	}
	return body, nil
}
