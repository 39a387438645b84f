package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultAPI is the operator API the CLI talks to without --api or
// BATON_API: the one `baton dev` serves.
const DefaultAPI = "http://127.0.0.1:8080"

// requestTimeout bounds every request but a stream read.
const requestTimeout = 30 * time.Second

// maxErrorBody is how much of an error answer is read for its message.
const maxErrorBody = 64 << 10

// client calls the operator API at base.
type client struct {
	base     string
	token    string // BATON_TOKEN, sent as a bearer token
	operator string // BATON_OPERATOR, the dev server's X-Baton-Operator
	http     *http.Client
}

// APIError is an answer of the operator API with a 4xx or 5xx status.
type APIError struct {
	Status  int
	Message string
}

func (e *APIError) Error() string { return e.Message }

// UnreachableError is a request that got no answer from the server.
type UnreachableError struct {
	URL string
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach %s: %v", e.URL, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

func newClient(base, token, operator string) (*client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usagef("the API address %q is not an http(s) URL", base)
	}
	return &client{base: strings.TrimRight(base, "/"), token: token, operator: operator, http: &http.Client{}}, nil
}

// request builds a request for path (already escaped) with a JSON body
// when in is not nil.
func (c *client) request(ctx context.Context, method, path string, in any) (*http.Request, error) {
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
		return nil, fmt.Errorf("build request: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.operator != "" {
		req.Header.Set("X-Baton-Operator", c.operator)
	}
	req.Header.Set("User-Agent", "baton-cli")
	return req, nil
}

// do sends req and returns the response when its status is 2xx; any other
// status is an *APIError carrying the server's message, and no answer at
// all is an *UnreachableError.
func (c *client) do(req *http.Request) (*http.Response, error) {
	resp, err := c.http.Do(req)
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
	var e struct {
		Error string `json:"error"`
	}
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
	return nil, &APIError{Status: resp.StatusCode, Message: msg}
}

// call sends a JSON request and decodes the JSON answer into out, unless
// out is nil.
func (c *client) call(ctx context.Context, method, path string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
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
		return fmt.Errorf("decode the answer to %s %s: %w", method, path, err)
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

// seg escapes one path segment.
func seg(s string) string { return url.PathEscape(s) }
