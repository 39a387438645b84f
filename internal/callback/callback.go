package callback

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Policy is how long a tool's callback may take: Timeout from the moment
// its token was handed out, and, when Heartbeat is set, at most Heartbeat
// between two heartbeats (the first counted from the hand-out). A call
// whose callback outlives either gets a timeout error result.
type Policy struct {
	Timeout   time.Duration `json:"timeout"`
	Heartbeat time.Duration `json:"heartbeat,omitempty"`
}

// Bounds of a Policy.
const (
	// DefaultTimeout is the Timeout of a Policy that sets none.
	DefaultTimeout = 24 * time.Hour
	// MaxTimeout is the longest Timeout: a year.
	MaxTimeout = 365 * 24 * time.Hour
	// MinTimeout is the shortest Timeout or Heartbeat.
	MinTimeout = time.Second
)

// Of returns p with its defaults filled in.
func (p Policy) Of() Policy {
	if p.Timeout == 0 {
		p.Timeout = DefaultTimeout
	}
	return p
}

// Check says what is wrong with p, nil when nothing is.
func (p Policy) Check() error {
	p = p.Of()
	switch {
	case p.Timeout < MinTimeout || p.Timeout > MaxTimeout:
		return fmt.Errorf("callback timeout %s: want %s to %s", p.Timeout, MinTimeout, MaxTimeout)
	case p.Heartbeat != 0 && (p.Heartbeat < MinTimeout || p.Heartbeat > p.Timeout):
		return fmt.Errorf("callback heartbeat %s: want %s to the timeout (%s)", p.Heartbeat, MinTimeout, p.Timeout)
	}
	return nil
}

// Status is how a callback ended.
type Status string

// Statuses. A callback with none is still open.
const (
	Completed Status = "completed" // the outside system sent a result
	Failed    Status = "failed"    // the outside system sent an error
	TimedOut  Status = "timeout"   // its timeout or heartbeat timeout passed first
)

// Callback is one handed-out token of a tool call's attempt, as a turn's
// facts record it: callback.opened (the hash, never the token, and the
// policy), callback.heartbeat (Beat) and callback.ended (Status and the
// result).
type Callback struct {
	ToolCallID string `json:"toolCallId"`
	Tool       string `json:"tool,omitempty"`
	// Attempt is the execution attempt (from 1) the token is bound to.
	Attempt int `json:"attempt"`
	// Hash is Hash of the token: the record never holds the token.
	Hash string `json:"hash"`
	// Opened is when the token was handed out, Beat the last heartbeat.
	Opened time.Time `json:"opened,omitzero"`
	Beat   time.Time `json:"beat,omitzero"`
	Policy Policy    `json:"policy"`
	Status Status    `json:"status,omitempty"`
	// Output is a completion's result, Error a failure's or a timeout's
	// text: what the model sees.
	Output json.RawMessage `json:"output,omitempty"`
	Error  string          `json:"error,omitempty"`
	// By names who ended it: "callback" for the token's holder, or the
	// operator or turn that did.
	By string `json:"by,omitempty"`
}

// Ended reports whether the callback's end was recorded.
func (c Callback) Ended() bool { return c.Status != "" }

// Deadline is when the callback times out: its timeout from Opened, or
// sooner, its heartbeat timeout from the last heartbeat.
func (c Callback) Deadline() time.Time {
	p := c.Policy.Of()
	d := c.Opened.Add(p.Timeout)
	if p.Heartbeat > 0 {
		last := c.Opened
		if c.Beat.After(last) {
			last = c.Beat
		}
		if h := last.Add(p.Heartbeat); h.Before(d) {
			d = h
		}
	}
	return d
}

// TimeoutText is the error result the model sees for a callback that
// timed out at deadline.
func (c Callback) TimeoutText() string {
	p := c.Policy.Of()
	if p.Heartbeat > 0 && c.Deadline().Before(c.Opened.Add(p.Timeout)) {
		return fmt.Sprintf("the outside system sent no heartbeat within %s; the call is abandoned and its result will not be accepted", p.Heartbeat)
	}
	return fmt.Sprintf("the outside system did not complete the call within %s; the call is abandoned and its result will not be accepted", p.Timeout)
}

// Result is what a token's holder sends: Output (any JSON value) for a
// completion, or Error (the text the model sees) for a failure.
type Result struct {
	Output json.RawMessage `json:"output,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// MaxError is the longest failure text, in bytes.
const MaxError = 16 << 10

// Check says what is wrong with r: exactly one of Output and Error, the
// output valid JSON.
func (r Result) Check() error {
	switch {
	case len(r.Output) > 0 && r.Error != "":
		return fmt.Errorf("%w: output and error both set; send one", ErrBadResult)
	case len(r.Output) == 0 && r.Error == "":
		return fmt.Errorf("%w: neither output nor error set", ErrBadResult)
	case len(r.Output) > 0 && !json.Valid(r.Output):
		return fmt.Errorf("%w: output is not JSON", ErrBadResult)
	case len(r.Error) > MaxError:
		return fmt.Errorf("%w: error of %d bytes, longer than %d", ErrBadResult, len(r.Error), MaxError)
	}
	return nil
}

// Status is the status r ends a callback with.
func (r Result) Status() Status {
	if r.Error != "" {
		return Failed
	}
	return Completed
}

// Errors of the token's use. Each writes nothing.
var (
	// ErrUnknown: no callback of the session has the token (forged,
	// mistyped, or its session deleted).
	ErrUnknown = errors.New("callback: no such callback")
	// ErrDone: the callback already ended; a token is used once.
	ErrDone = errors.New("callback: already ended")
	// ErrExpired: the callback timed out, or the turn it was for ended.
	ErrExpired = errors.New("callback: expired")
	// ErrBadResult: a result Result.Check refuses.
	ErrBadResult = errors.New("callback: bad result")
	// ErrBadToken: text that is not a token's shape.
	ErrBadToken = errors.New("callback: malformed token")
)

// prefix starts every token, and names its version.
const prefix = "bcb1"

// Token is a parsed callback token: the session and turn it is bound to,
// and its hash, by which the turn's record finds it.
type Token struct {
	Session, Turn string
	Hash          string
}

// Mint makes a new token for a call of turn turn of session session: 256
// random bits after the two names. It returns the token and its Token.
func Mint(session, turn string) (string, Token) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (Go 1.24)
	enc := base64.RawURLEncoding
	s := prefix + "." + enc.EncodeToString([]byte(session)) + "." + enc.EncodeToString([]byte(turn)) + "." + enc.EncodeToString(b[:])
	return s, Token{Session: session, Turn: turn, Hash: Hash(s)}
}

// Parse reads a token made by Mint, failing with ErrBadToken.
func Parse(s string) (Token, error) {
	p := strings.Split(s, ".")
	enc := base64.RawURLEncoding
	if len(p) != 4 || p[0] != prefix || len(p[3]) != enc.EncodedLen(32) {
		return Token{}, ErrBadToken
	}
	sess, err1 := enc.DecodeString(p[1])
	turn, err2 := enc.DecodeString(p[2])
	_, err3 := enc.DecodeString(p[3])
	if err1 != nil || err2 != nil || err3 != nil || len(sess) == 0 || len(turn) == 0 {
		return Token{}, ErrBadToken
	}
	return Token{Session: string(sess), Turn: string(turn), Hash: Hash(s)}, nil
}

// Hash is the SHA-256 of a token, in hex: what records hold.
func Hash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// Same reports whether two hashes are equal, in constant time.
func Same(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// Handle is what a tool is handed: the token, the URLs that take it
// (empty when baton was given no public URL), and when the callback
// times out unless a heartbeat moves it.
type Handle struct {
	Token        string
	URL          string // POST {"output": …} or {"error": "…"}
	HeartbeatURL string // POST, empty body
	Deadline     time.Time
}

// ErrPending is what a tool returns, with no result, once it handed its
// token out: the call completes when the token's holder sends its
// result. A tool that returns it without having opened a callback gets
// an error result.
var ErrPending = errors.New("callback: the call's result is pending")

// Opener hands out the callback of the tool call running in a context
// (WithOpener); the runner makes one per call.
type Opener func(ctx context.Context) (Handle, error)

type openerKey struct{}

// WithOpener returns ctx carrying o.
func WithOpener(ctx context.Context, o Opener) context.Context {
	return context.WithValue(ctx, openerKey{}, o)
}

// ErrNoCallback: Open outside a tool call that completes by callback.
var ErrNoCallback = errors.New("callback: not in a tool call that completes by callback (declare it on the tool)")

// Open hands out the callback of the tool call running in ctx: the
// token is recorded (by its hash) before Open returns it, so a crash
// after a tool gave it away never loses it. Calling Open again in the
// same run returns the same handle.
func Open(ctx context.Context) (Handle, error) {
	o, ok := ctx.Value(openerKey{}).(Opener)
	if !ok || o == nil {
		return Handle{}, ErrNoCallback
	}
	return o(ctx)
}

// URLs returns the completion and heartbeat URLs of token under base, the
// operator API's public URL; both empty for an empty base.
func URLs(base, token string) (string, string) {
	if base == "" {
		return "", ""
	}
	u := strings.TrimRight(base, "/") + "/callbacks/" + token
	return u, u + "/heartbeat"
}
