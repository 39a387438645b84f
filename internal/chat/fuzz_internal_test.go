package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/pkg/reducer"
)

// FuzzDecodeRequest feeds fuzzed bodies and Content-Types to decodeRequest,
// the chat request decoder. It refuses a request with an *httpjson.Refusal
// of 400, 413 or 415 and a clear message, or accepts one JSON object in
// UTF-8, within the body limit, with a chat id of the allowed form, and
// returns exactly one of: the last message, a user message with a valid
// id and a non-blank text within MaxText; or the approval answers of the
// last, assistant, message, each naming an approval and a tool call.
// Seeds beyond these are in testdata/fuzz/FuzzDecodeRequest.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []struct{ ct, body string }{
		{"application/json", `{"id":"c1","trigger":"submit-message","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"hi"}]}]}`},
		{"application/json; charset=utf-8", `{"id":"c1","messages":[{"id":"a1","role":"assistant","parts":[{"type":"tool-x","toolCallId":"t1","state":"approval-responded","approval":{"id":"ap1","approved":true,"reason":"ok"}}]}]}`},
		{"application/json", `{"id":"c1","messages":[{"id":"m1","role":"user","parts":[{"type":"data-x","data":{}},{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"agent":"demo","extra":1}`},
		{"text/plain", `{"id":"c1"}`},
		{"application/json", `{"id":"../x","messages":[]}`},
		{"application/json", `{"id":"c1","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"  "}]}]}`},
		{"application/json", `{"id":"c1","trigger":"regenerate-message","messages":[{"id":"m1","role":"user","parts":[]}]}`},
		{"application/json", `{"id":"c1","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"x"}]}]} {}`},
		{"application/json", "{\"id\":\"c\xff\"}"},
		{"application/json", `[{"id":"c1"}]`},
	} {
		f.Add(s.ct, []byte(s.body))
	}
	const max = 1 << 10
	f.Fuzz(func(t *testing.T, ct string, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/chat", bytes.NewReader(body))
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		in, msg, answers, err := decodeRequest(httptest.NewRecorder(), r, max)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		switch {
		case len(body) > max:
			t.Fatalf("a body of %d bytes passed the %d limit", len(body), max)
		case !utf8.Valid(body) || !json.Valid(body) || bytes.TrimSpace(body)[0] != '{':
			t.Fatalf("%q accepted: not one JSON object in UTF-8", body)
		case !validID(in.ID) || len(SessionID("caller", in.ID)) > 128:
			t.Fatalf("chat id %q accepted", in.ID)
		case in.Trigger == regenerate:
			if msg != nil || answers != nil || (in.MessageID != "" && !validID(in.MessageID)) {
				t.Fatalf("a regenerate of %q decoded message %v and answers %v", in.MessageID, msg, answers)
			}
			return
		case (msg == nil) == (answers == nil):
			t.Fatalf("message %v and answers %v: want exactly one", msg, answers)
		case in.Trigger != "" && in.Trigger != "submit-message":
			t.Fatalf("trigger %q accepted", in.Trigger)
		}
		last := in.Messages[len(in.Messages)-1]
		if msg != nil {
			if last.Role != "user" || msg.msg.ID != last.ID || !validID(msg.msg.ID) || (strings.TrimSpace(msg.msg.Text) == "" && len(msg.files) == 0) || len(msg.msg.Text) > MaxText {
				t.Fatalf("message %+v accepted from %+v", msg, last)
			}
			return
		}
		if last.Role != "assistant" {
			t.Fatalf("answers from a %q message", last.Role)
		}
		for _, a := range answers {
			if a.approval == "" || a.toolCall == "" || (a.decision != reducer.Approve && a.decision != reducer.Deny) || len(a.reason) > 4<<10 {
				t.Fatalf("answer %+v accepted", a)
			}
		}
	})
}

// checkRefusal fails t unless err is a refusal of bad input with a clear
// message a JSON error body can carry.
func checkRefusal(t *testing.T, err error) {
	t.Helper()
	ae, ok := errors.AsType[*httpjson.Refusal](err)
	if !ok {
		t.Fatalf("decodeRequest: %v is not an *httpjson.Refusal", err)
	}
	switch ae.Status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
	default:
		t.Fatalf("decodeRequest: status %d (%s)", ae.Status, ae.Msg)
	}
	if ae.Msg == "" || !utf8.ValidString(ae.Msg) {
		t.Fatalf("decodeRequest: unclear message %q", ae.Msg)
	}
	if _, err := json.Marshal(httpjson.ErrorBody{Error: ae.Msg}); err != nil {
		t.Fatal(err)
	}
}
