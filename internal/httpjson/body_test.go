package httpjson_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/httpjson"
)

// TestDecodeObject: one JSON object decodes; anything else is a 400 that
// says why, and strict refuses unknown fields.
func TestDecodeObject(t *testing.T) {
	type in struct {
		Text string `json:"text"`
	}
	var v in
	if err := httpjson.DecodeObject([]byte(` {"text":"hi"} `), &v, true); err != nil || v.Text != "hi" {
		t.Fatalf("decode = %+v, %v", v, err)
	}
	for body, want := range map[string]string{
		"\xff":                         "not valid UTF-8",
		`["text"]`:                     "must be a JSON object",
		`{"text":1}`:                   "invalid request body",
		`{"text":"a"} {}`:              "unexpected data after the JSON object",
		`{"text":"a","other":"field"}`: "invalid request body",
	} {
		err := httpjson.DecodeObject([]byte(body), &in{}, true)
		var r *httpjson.Refusal
		if !errors.As(err, &r) || r.Status != 400 || !strings.Contains(r.Msg, want) {
			t.Errorf("%q: %v, want a 400 saying %q", body, err, want)
		}
	}
	if err := httpjson.DecodeObject([]byte(`{"text":"a","other":"field"}`), &in{}, false); err != nil {
		t.Errorf("not strict: %v, want unknown fields ignored", err)
	}
}
