package providertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/baton-run/baton/internal/model"
)

// BodyClient returns an HTTP client that answers every request, without a
// network, with status 200, header and body: what a provider's streaming
// endpoint would send. Fuzz targets use it to put arbitrary bytes in front
// of a provider's stream decoder.
func BodyClient(header http.Header, body []byte) *http.Client {
	return &http.Client{Transport: bodyTransport{header: header, body: body}}
}

type bodyTransport struct {
	header http.Header
	body   []byte
}

func (t bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: t.header.Clone(), Body: io.NopCloser(bytes.NewReader(t.body)),
		ContentLength: int64(len(t.body)), Request: r,
	}, nil
}

// CheckStep checks a drained step (see Collect) against the contract of
// model.Model: it ends with exactly one Finish and no error, or with a
// *model.Error and no Finish. Every event has a known type; a tool call
// has a name and an input that is a JSON object; a finish has a known stop
// reason and usage that is not negative.
func CheckStep(tb testing.TB, events []model.Event, err error) {
	tb.Helper()
	finishes := 0
	for i, e := range events {
		switch e.Type {
		case model.TextDelta, model.ReasoningDelta, model.ReasoningSignature:
		case model.ToolCall:
			var obj map[string]json.RawMessage
			if e.Call.Name == "" || json.Unmarshal(e.Call.Input, &obj) != nil || obj == nil {
				tb.Fatalf("event %d: tool call %+v (input %s): want a name and a JSON object", i, e.Call, e.Call.Input)
			}
		case model.Finish:
			finishes++
			if i != len(events)-1 {
				tb.Fatalf("event %d: finish before the end, then %+v", i, events[i+1:])
			}
			switch e.Stop {
			case model.StopEnd, model.StopToolCalls, model.StopLength, model.StopOther:
			default:
				tb.Fatalf("finish with stop reason %q", e.Stop)
			}
			if e.Usage.InputTokens < 0 || e.Usage.OutputTokens < 0 {
				tb.Fatalf("finish with negative usage %+v", e.Usage)
			}
		default:
			tb.Fatalf("event %d has type %q", i, e.Type)
		}
	}
	if err != nil {
		var me *model.Error
		if !errors.As(err, &me) || me.Kind == "" {
			tb.Fatalf("the step ended with %v (%T), not a classified *model.Error", err, err)
		}
		if finishes != 0 {
			tb.Fatalf("an error after a finish: %v", err)
		}
		return
	}
	if finishes != 1 {
		tb.Fatalf("the step ended without an error and with %d finishes: %+v", finishes, events)
	}
}
