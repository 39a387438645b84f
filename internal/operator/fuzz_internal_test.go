package operator

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/pkg/reducer"
)

// FuzzDecode feeds fuzzed bodies and Content-Types to decode, into each
// shape a handler decodes. decode refuses a body with an *httpjson.Refusal of 400,
// 413 or 415 and a clear message, or accepts exactly one JSON object in
// UTF-8 whose fields are all known, leaving what re-encodes to an equal
// value.
func FuzzDecode(f *testing.F) {
	for _, s := range []struct {
		shape    uint8
		ct, body string
	}{
		{0, "application/json", `{"agent":"demo"}`},
		{1, "application/json; charset=utf-8", `{"text":"café ☕ deploy?"}`},
		{2, "application/json", `{"decision":"approve","reason":"looks fine"}`},
		{3, "", ``},
		{3, "application/json", `{"reason":"x"} {}`},
		{4, "application/json", `{"verdict":"rerun"}`},
		{0, "text/plain", `{"agent":"demo"}`},
		{0, "application/json; charset=iso-8859-1", `{"agent":"demo"}`},
		{1, "application/json", "{\"text\":\"d\xffmo\"}"},
		{1, "application/json", `{"text":["hi"]}`},
		{1, "application/json", `{"text":"hi","role":"system"}`},
		{0, "application/json", `{"agent":"` + strings.Repeat("x", 300) + `"}`},
		{2, "application/json", `{"decision":"approve","Decision":"deny"}`},
		{1, "application/json", `{"text":"\ud800"}`},
		{0, "application/json", ` null`},
	} {
		f.Add(s.shape, s.ct, []byte(s.body))
	}
	const max = 256
	f.Fuzz(func(t *testing.T, shape uint8, ct string, body []byte) {
		var dst any
		optional := false
		switch shape % 5 {
		case 0:
			dst = &struct {
				Agent string `json:"agent"`
			}{}
		case 1:
			dst = &struct {
				Text string `json:"text"`
			}{}
		case 2:
			dst = &struct {
				Decision reducer.Decision `json:"decision"`
				Reason   string           `json:"reason"`
			}{}
		case 3:
			dst = &struct {
				Reason string `json:"reason"`
			}{}
			optional = true
		case 4:
			dst = &struct {
				Verdict reducer.Verdict `json:"verdict"`
			}{}
		}
		r := httptest.NewRequest(http.MethodPost, "/sessions", bytes.NewReader(body))
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		err := decode(httptest.NewRecorder(), r, max, dst, optional)
		if err != nil {
			ae, ok := errors.AsType[*httpjson.Refusal](err)
			if !ok {
				t.Fatalf("decode: %v is not an *httpjson.Refusal", err)
			}
			switch ae.Status {
			case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
			default:
				t.Fatalf("decode: status %d", ae.Status)
			}
			if ae.Msg == "" || !utf8.ValidString(ae.Msg) {
				t.Fatalf("decode: unclear message %q", ae.Msg)
			}
			if _, err := json.Marshal(api.Error{Error: ae.Msg}); err != nil {
				t.Fatal(err)
			}
			return
		}
		if len(body) == 0 {
			if !optional {
				t.Fatal("an empty body was accepted for a required one")
			}
			return
		}
		if len(body) > max {
			t.Fatalf("a body of %d bytes passed the %d limit", len(body), max)
		}
		if checkJSONType(ct) != nil {
			t.Fatalf("Content-Type %q was accepted", ct)
		}
		if !utf8.Valid(body) || !json.Valid(body) {
			t.Fatalf("%q accepted: not one JSON value in UTF-8", body)
		}
		if b := bytes.TrimSpace(body); b[0] != '{' {
			t.Fatalf("%q accepted: not an object", body)
		}
		enc, err := json.Marshal(dst)
		if err != nil {
			t.Fatal(err)
		}
		again := dst
		r = httptest.NewRequest(http.MethodPost, "/sessions", bytes.NewReader(enc))
		r.Header.Set("Content-Type", "application/json")
		if err := decode(httptest.NewRecorder(), r, 1<<20, again, optional); err != nil {
			t.Fatalf("re-encoded %s refused: %v", enc, err)
		}
		if enc2, _ := json.Marshal(again); string(enc2) != string(enc) {
			t.Fatalf("round trip %s -> %s", enc, enc2)
		}
	})
}
