package chat

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/internal/parts"
)

// VersionHeader is the request header in which a client names its AI SDK
// major, set through the transport's headers option.
const VersionHeader = "X-Ai-Sdk-Version"

// Version is the AI SDK major a stream is shaped for. The zero Version,
// for a request that names none, gives a stream that majors 6 and 7 both
// parse.
//
// What each major gets, where baton's part is one the major lacks:
//
//	baton part               5                      6, none     7
//	tool-approval-request    left out               sent        sent
//	tool-approval-response   left out               left out    sent
//	tool-output-denied       tool-output-error      sent        sent
//	finish{finishReason}     a reason outside the major's list becomes "other"
//	                         ("cancelled" is "interrupted" for 7)
//
// Every other part is sent as it is. A major-5 client sees a call that
// needs approval stay in input-available; it is answered through the
// operator route, and the rest of the turn is read with GET
// /chat/{id}/stream.
type Version int

// The majors served.
const (
	Unversioned Version = 0
	V5          Version = 5
	V6          Version = 6
	V7          Version = 7
)

// ParseVersion reads the version header: empty, or a major of 5, 6 or 7,
// optionally followed by a minor and patch ("6", "6.0.12"). Any other
// value is refused with a 400 *httpjson.Refusal.
func ParseVersion(r *http.Request) (Version, error) {
	h := strings.TrimSpace(r.Header.Get(VersionHeader))
	if h == "" {
		return Unversioned, nil
	}
	major, _, _ := strings.Cut(strings.TrimPrefix(h, "v"), ".")
	n, err := strconv.Atoi(major)
	if err != nil || n < 5 || n > 7 {
		return 0, httpjson.Refuse(http.StatusBadRequest, "%s %q is not an AI SDK major this server speaks: want 5, 6 or 7", VersionHeader, httpjson.Clip(h))
	}
	return Version(n), nil
}

// finishReasons are the finish reasons each major's schema accepts.
var finishReasons = map[Version][]string{
	V5:          {"stop", "length", "content-filter", "tool-calls", "error", "other", "unknown"},
	V6:          {"stop", "length", "content-filter", "tool-calls", "error", "other"},
	Unversioned: {"stop", "length", "content-filter", "tool-calls", "error", "other"},
	V7:          {"stop", "length", "content-filter", "tool-calls", "error", "interrupted", "other"},
}

// Map returns p as the major v parses it, or false when v has no such part
// and it is left out.
func (v Version) Map(p parts.Part) (parts.Part, bool) {
	switch p.Type {
	case parts.ToolApprovalRequest:
		return p, v != V5
	case parts.ToolApprovalResponse:
		return p, v == V7
	case parts.ToolOutputDenied:
		if v == V5 {
			text := "denied by the operator"
			if p.Reason != "" {
				text += ": " + p.Reason
			}
			return parts.Part{Type: parts.ToolOutputError, ToolCallID: p.ToolCallID, ErrorText: text}, true
		}
	default:
		if p.Type.IsData() {
			// The AI SDK's data chunk has these fields and no more (a
			// tool's part also names its call, for baton's own readers).
			return parts.Part{Type: p.Type, ID: p.ID, Data: p.Data, Transient: p.Transient}, true
		}
	case parts.Finish:
		if p.FinishReason != "" && !slices.Contains(finishReasons[v], p.FinishReason) {
			if v == V7 && p.FinishReason == "cancelled" {
				p.FinishReason = "interrupted"
			} else {
				p.FinishReason = "other"
			}
		}
	}
	return p, true
}
