package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/baton-run/baton/pkg/reducer"
)

// RequestTimeout bounds every request of a Client but an event stream's.
const RequestTimeout = 30 * time.Second

// maxErrorBody is how much of an error answer is read for its message.
const maxErrorBody = 64 << 10

// Client calls the operator API at one base URL. Its methods answer a 4xx
// or 5xx with a *StatusError and no answer at all with an
// *UnreachableError.
type Client struct {
	base string
	opts ClientOptions
}

// ClientOptions are a Client's credentials and transport; each is
// optional.
type ClientOptions struct {
	// Token is sent as a bearer token (Authorization: Bearer ...).
	Token string
	// Operator is sent as X-Baton-Operator, the caller `baton dev`
	// serves.
	Operator string
	// UserAgent is sent as User-Agent.
	UserAgent string
	// HTTP sends the requests; nil means a client of its own.
	HTTP *http.Client
}

// StatusError is an answer of the operator API with a 4xx or 5xx status:
// Message is the error body's message (or the status, when the body has
// none).
type StatusError struct {
	Status  int
	Message string
}

func (e *StatusError) Error() string { return e.Message }

// UnreachableError is a request that got no answer from the server.
type UnreachableError struct {
	URL string
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach %s: %v", e.URL, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// NewClient returns a client of the operator API at base, an http or https
// URL ("http://127.0.0.1:8080").
func NewClient(base string, o ClientOptions) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the API address %q is not an http(s) URL", base)
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{}
	}
	return &Client{base: strings.TrimRight(base, "/"), opts: o}, nil
}

// seg escapes one path segment.
func seg(s string) string { return url.PathEscape(s) }

func sessionPath(id string) string { return "/sessions/" + seg(id) }

// Sessions reads one page of the caller's sessions, newest first: at most
// limit (0 lets the server choose), after cursor ("" for the first page).
func (c *Client) Sessions(ctx context.Context, limit int, cursor string) (List, error) {
	var q []string
	if limit > 0 {
		q = append(q, "limit="+strconv.Itoa(limit))
	}
	if cursor != "" {
		q = append(q, "cursor="+seg(cursor))
	}
	path := "/sessions"
	if len(q) > 0 {
		path += "?" + strings.Join(q, "&")
	}
	var out List
	return out, c.call(ctx, http.MethodGet, path, nil, &out)
}

// Session reads a session's state.
func (c *Client) Session(ctx context.Context, id string) (Session, error) {
	var out Session
	return out, c.call(ctx, http.MethodGet, sessionPath(id), nil, &out)
}

// CreateSession creates a session of agent.
func (c *Client) CreateSession(ctx context.Context, agent string) (Session, error) {
	var out Session
	return out, c.call(ctx, http.MethodPost, "/sessions", CreateRequest{Agent: agent}, &out)
}

// DeleteSession deletes a session and its child sessions.
func (c *Client) DeleteSession(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, sessionPath(id), nil, nil)
}

// Export reads a session's export bundle as the API answers it; decode it
// into an Export to read it.
func (c *Client) Export(ctx context.Context, id string) (json.RawMessage, error) {
	var out json.RawMessage
	return out, c.call(ctx, http.MethodGet, sessionPath(id)+"/export", nil, &out)
}

// Send posts a message to a session.
func (c *Client) Send(ctx context.Context, id, text string) (MessageAccepted, error) {
	var out MessageAccepted
	return out, c.call(ctx, http.MethodPost, sessionPath(id)+"/messages", MessageRequest{Text: text}, &out)
}

// Facts reads a session's facts after seq after.
func (c *Client) Facts(ctx context.Context, id string, after int64) (Facts, error) {
	var out Facts
	return out, c.call(ctx, http.MethodGet, fmt.Sprintf("%s/facts?after=%d", sessionPath(id), after), nil, &out)
}

// Answer approves or denies a pending approval; reason may be empty.
func (c *Client) Answer(ctx context.Context, id, approval string, d reducer.Decision, reason string) error {
	return c.call(ctx, http.MethodPost, sessionPath(id)+"/approvals/"+seg(approval), AnswerRequest{Decision: d, Reason: reason}, nil)
}

// Edit approves a pending call with new input, which the tool's schema
// and approval rules check again; reason may be empty.
func (c *Client) Edit(ctx context.Context, id, approval string, input json.RawMessage, reason string) error {
	return c.call(ctx, http.MethodPost, sessionPath(id)+"/approvals/"+seg(approval), AnswerRequest{Decision: reducer.Edit, Input: input, Reason: reason}, nil)
}

// Respond answers a pending call with output as its result, without
// running the tool; reason may be empty.
func (c *Client) Respond(ctx context.Context, id, approval string, output json.RawMessage, reason string) error {
	return c.call(ctx, http.MethodPost, sessionPath(id)+"/approvals/"+seg(approval), AnswerRequest{Decision: reducer.Respond, Output: output, Reason: reason}, nil)
}

// Settle gives the verdict on an uncertain execution: rerun or abandon.
func (c *Client) Settle(ctx context.Context, id, execution string, v reducer.Verdict) error {
	return c.call(ctx, http.MethodPost, sessionPath(id)+"/executions/"+seg(execution), VerdictRequest{Verdict: v}, nil)
}

// Cancel cancels a session's open turn; reason may be empty, and then no
// body is sent.
func (c *Client) Cancel(ctx context.Context, id, reason string) error {
	var in any
	if reason != "" {
		in = CancelRequest{Reason: reason}
	}
	return c.call(ctx, http.MethodPost, sessionPath(id)+"/cancel", in, nil)
}

// Raise sets new spend caps for a turn suspended at a limit.
func (c *Client) Raise(ctx context.Context, id string, in RaiseRequest) error {
	return c.call(ctx, http.MethodPost, sessionPath(id)+"/limits", in, nil)
}

// SetTimer ends the timer of a turn suspended on one at at, or now when at
// is nil.
func (c *Client) SetTimer(ctx context.Context, id string, at *time.Time) error {
	return c.call(ctx, http.MethodPost, sessionPath(id)+"/wake", TimerRequest{At: at}, nil)
}

// SetSchedule gives a session a schedule, replacing any.
func (c *Client) SetSchedule(ctx context.Context, id string, in ScheduleRequest) error {
	return c.call(ctx, http.MethodPut, sessionPath(id)+"/schedule", in, nil)
}

// ClearSchedule removes a session's schedule.
func (c *Client) ClearSchedule(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, sessionPath(id)+"/schedule", nil, nil)
}

// ReleaseGrant releases a grant an ended turn of the session left.
func (c *Client) ReleaseGrant(ctx context.Context, id, grant string) error {
	return c.call(ctx, http.MethodPost, sessionPath(id)+"/grants/"+seg(grant)+"/release", struct{}{}, nil)
}

// Orphans lists the caller's orphaned grants.
func (c *Client) Orphans(ctx context.Context) (Orphans, error) {
	var out Orphans
	return out, c.call(ctx, http.MethodGet, "/claims/orphans", nil, &out)
}

// ReleaseOrphan releases one of the caller's orphaned grants.
func (c *Client) ReleaseOrphan(ctx context.Context, grant string) error {
	return c.call(ctx, http.MethodPost, "/claims/orphans/"+seg(grant)+"/release", struct{}{}, nil)
}

// Complete completes a tool call waiting for its callback, as the holder
// of its token (POST /callbacks/{token}): in.Output is the call's result,
// or in.Error the error the model sees. The token is the credential; it
// is path-escaped, and no error of Complete holds it.
func (c *Client) Complete(ctx context.Context, token string, in CallbackRequest) (CallbackAnswer, error) {
	var out CallbackAnswer
	return out, c.callAs(ctx, http.MethodPost, callbackPath(token), "/callbacks/{token}", in, &out)
}

// Heartbeat renews the heartbeat timeout of the callback of token (POST
// /callbacks/{token}/heartbeat) and returns its new deadline. No error of
// Heartbeat holds the token.
func (c *Client) Heartbeat(ctx context.Context, token string) (CallbackAnswer, error) {
	var out CallbackAnswer
	return out, c.callAs(ctx, http.MethodPost, callbackPath(token)+"/heartbeat", "/callbacks/{token}/heartbeat", nil, &out)
}

// CompleteCall completes by hand, as the session's owner, the tool call
// toolCallID of the session's open turn that waits for its callback
// (POST /sessions/{id}/callbacks/{toolCallId}): no token needed.
func (c *Client) CompleteCall(ctx context.Context, id, toolCallID string, in CompleteCallRequest) (Accepted, error) {
	var out Accepted
	return out, c.call(ctx, http.MethodPost, sessionPath(id)+"/callbacks/"+seg(toolCallID), in, &out)
}

func callbackPath(token string) string { return "/callbacks/" + seg(token) }

// StreamPage reads a turn stream's parts after cursor after ("" from its
// start) as one JSON page.
func (c *Client) StreamPage(ctx context.Context, id, turn, after string) (StreamPage, error) {
	path := sessionPath(id) + "/turns/" + seg(turn) + "/stream"
	if after != "" {
		path += "?after=" + url.QueryEscape(after)
	}
	var out StreamPage
	return out, c.call(ctx, http.MethodGet, path, nil, &out)
}

// Events opens a turn stream as Server-Sent Events, after the event id
// lastEventID ("" from its start): each part is an event whose id is its
// cursor, and a closed stream ends with an event named close. The caller
// reads and closes the body; ctx bounds the whole read.
func (c *Client) Events(ctx context.Context, id, turn, lastEventID string) (io.ReadCloser, error) {
	req, err := c.request(ctx, http.MethodGet, sessionPath(id)+"/turns/"+seg(turn)+"/stream", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := c.do(req)
	if err != nil {
		return nil, err
	}
	if mt := resp.Header.Get("Content-Type"); !strings.HasPrefix(mt, "text/event-stream") {
		resp.Body.Close()
		return nil, fmt.Errorf("the stream answered %q, not an event stream", mt)
	}
	return resp.Body, nil
}

// request builds a request for path (already escaped) with a JSON body
// when in is not nil.
func (c *Client) request(ctx context.Context, method, path string, in any) (*http.Request, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", unwrapURL(err)) // the URL may hold a token
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.Token)
	}
	if c.opts.Operator != "" {
		req.Header.Set("X-Baton-Operator", c.opts.Operator)
	}
	if c.opts.UserAgent != "" {
		req.Header.Set("User-Agent", c.opts.UserAgent)
	}
	return req, nil
}

// do sends req and returns the response when its status is 2xx; any other
// status is a *StatusError carrying the server's message, and no answer at
// all is an *UnreachableError.
func (c *Client) do(req *http.Request) (*http.Response, error) {
	resp, err := c.opts.HTTP.Do(req)
	if err != nil {
		if ctxErr := req.Context().Err(); ctxErr != nil && !errors.Is(ctxErr, context.DeadlineExceeded) {
			return nil, ctxErr
		}
		return nil, &UnreachableError{URL: c.base, Err: unwrapURL(err)}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var e Error
	msg := ""
	if json.Unmarshal(b, &e) == nil {
		msg = e.Error
	}
	if msg == "" {
		msg = strings.TrimSpace(string(b))
		if len(msg) > 200 || msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		msg = fmt.Sprintf("%s (HTTP %d)", msg, resp.StatusCode)
	}
	return nil, &StatusError{Status: resp.StatusCode, Message: msg}
}

// call sends a JSON request, within RequestTimeout, and decodes the JSON
// answer into out, unless out is nil.
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	return c.callAs(ctx, method, path, path, in, out)
}

// callAs is call whose errors name the path as shown, not path: a path
// that holds a secret (a callback's token) is shown as its pattern.
func (c *Client) callAs(ctx context.Context, method, path, shown string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	req, err := c.request(ctx, method, path, in)
	if err != nil {
		return err
	}
	resp, err := c.do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		if ctx.Err() != nil {
			return &UnreachableError{URL: c.base, Err: ctx.Err()}
		}
		return fmt.Errorf("decode the answer to %s %s: %w", method, shown, err)
	}
	return nil
}

// unwrapURL drops the *url.Error wrapper, whose message repeats the method
// and URL.
func unwrapURL(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}
