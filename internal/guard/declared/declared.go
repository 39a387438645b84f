package declared

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/baton-run/baton/internal/guard"
	"github.com/baton-run/baton/internal/tool/remote"
)

// Decl is a guardrail an agent file declares: exactly one of Patterns (a
// list of regular expressions), MaxLength (in characters), URL (an HTTP
// checker) or Lambda (a function's name or ARN). A pattern or length
// guardrail decides Action when the text matches or is too long (block
// when empty; redact replaces each match, or cuts the text, with
// Replacement); a remote checker is posted the Subject as JSON and
// answers a Decision.
type Decl struct {
	Name        string       `json:"name"`
	Stage       guard.Stage  `json:"stage"`
	Patterns    []string     `json:"patterns,omitempty"`
	MaxLength   int          `json:"maxLength,omitempty"`
	URL         string       `json:"url,omitempty"`
	Lambda      string       `json:"lambda,omitempty"`
	Action      guard.Action `json:"action,omitempty"`
	Reason      string       `json:"reason,omitempty"`
	Replacement string       `json:"replacement,omitempty"`
	Timeout     string       `json:"timeout,omitempty"`
	Parallel    bool         `json:"parallel,omitempty"`
}

// DefaultReplacement is what a redacting pattern puts in place of a match.
const DefaultReplacement = "[redacted]"

// MaxCheckerResponse is the largest answer a remote checker may give.
const MaxCheckerResponse = 1 << 20

// Build makes the guardrail d declares; remote checkers use client and
// lambda (a nil lambda makes a lambda checker that always fails, so it
// blocks).
func (d Decl) Build(client *http.Client, lambda remote.LambdaInvoker) (guard.Guardrail, error) {
	g := guard.Guardrail{Name: d.Name, Stage: d.Stage, Parallel: d.Parallel}
	if d.Timeout != "" {
		t, err := time.ParseDuration(d.Timeout)
		if err != nil || t <= 0 {
			return guard.Guardrail{}, fmt.Errorf("guardrail %q: timeout %q: want a positive duration such as 2s", d.Name, d.Timeout)
		}
		g.Timeout = t
	}
	kinds := 0
	for _, set := range []bool{len(d.Patterns) > 0, d.MaxLength != 0, d.URL != "", d.Lambda != ""} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return guard.Guardrail{}, fmt.Errorf("guardrail %q: declare exactly one of patterns, maxLength, url or lambda", d.Name)
	}
	act, err := d.action()
	if err != nil {
		return guard.Guardrail{}, err
	}
	switch {
	case len(d.Patterns) > 0:
		g.Check, err = patterns(d.Patterns, act)
	case d.MaxLength != 0:
		g.Check, err = maxLength(d.MaxLength, act)
	case d.URL != "":
		g.Check, err = httpChecker(d.URL, client)
	default:
		g.Check = lambdaChecker(d.Lambda, lambda)
	}
	if err != nil {
		return guard.Guardrail{}, fmt.Errorf("guardrail %q: %w", d.Name, err)
	}
	return g, g.Validate()
}

// action is the decision a pattern or length guardrail makes when it
// trips.
func (d Decl) action() (guard.Decision, error) {
	act := guard.Decision{Action: d.Action, Reason: d.Reason, Text: d.Replacement}
	if act.Action == "" {
		act.Action = guard.Block
	}
	if act.Reason == "" {
		act.Reason = "the message was stopped by guardrail " + d.Name
	}
	switch act.Action {
	case guard.Block, guard.Escalate:
	case guard.Redact:
		if act.Text == "" {
			act.Text = DefaultReplacement
		}
	default:
		return guard.Decision{}, fmt.Errorf("guardrail %q: action %q: want block, redact or escalate", d.Name, d.Action)
	}
	return act, nil
}

func patterns(list []string, act guard.Decision) (guard.Func, error) {
	res := make([]*regexp.Regexp, len(list))
	for i, p := range list {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("pattern %d: %w", i, err)
		}
		res[i] = re
	}
	return func(_ context.Context, s guard.Subject) (guard.Decision, error) {
		text, hit := s.Text, false
		for _, re := range res {
			if re.MatchString(text) {
				hit = true
				if act.Action == guard.Redact {
					text = re.ReplaceAllLiteralString(text, act.Text)
				}
			}
		}
		switch {
		case !hit:
			return guard.Decision{Action: guard.Allow}, nil
		case act.Action == guard.Redact:
			return guard.Decision{Action: guard.Redact, Reason: act.Reason, Text: text}, nil
		}
		return act, nil
	}, nil
}

func maxLength(n int, act guard.Decision) (guard.Func, error) {
	if n < 0 {
		return nil, errors.New("maxLength must be positive")
	}
	return func(_ context.Context, s guard.Subject) (guard.Decision, error) {
		if utf8.RuneCountInString(s.Text) <= n {
			return guard.Decision{Action: guard.Allow}, nil
		}
		if act.Action == guard.Redact {
			r := []rune(s.Text)
			return guard.Decision{Action: guard.Redact, Reason: act.Reason, Text: string(r[:n]) + act.Text}, nil
		}
		return act, nil
	}, nil
}

// body is what a remote checker receives: the subject as JSON.
func body(s guard.Subject) ([]byte, error) {
	return json.Marshal(struct {
		Guardrail string      `json:"guardrail"`
		Session   string      `json:"session"`
		Turn      string      `json:"turn"`
		Agent     string      `json:"agent"`
		Stage     guard.Stage `json:"stage"`
		Text      string      `json:"text"`
		Message   string      `json:"message,omitempty"`
		Step      int         `json:"step"`
	}{s.Guardrail, s.Session, s.Turn, s.Agent, s.Stage, s.Text, s.Message, s.Step})
}

func decode(b []byte) (guard.Decision, error) {
	var d guard.Decision
	if err := json.Unmarshal(b, &d); err != nil {
		return guard.Decision{}, fmt.Errorf("the checker's answer is not a decision: %w", err)
	}
	return d, d.Check()
}

func httpChecker(raw string, client *http.Client) (guard.Func, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("url %q: want an absolute http or https URL", raw)
	}
	if client == nil {
		client = http.DefaultClient
	}
	return func(ctx context.Context, s guard.Subject) (guard.Decision, error) {
		b, err := body(s)
		if err != nil {
			return guard.Decision{}, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, raw, bytes.NewReader(b))
		if err != nil {
			return guard.Decision{}, err
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			return guard.Decision{}, fmt.Errorf("checker: %w", err)
		}
		defer res.Body.Close()
		out, err := io.ReadAll(io.LimitReader(res.Body, MaxCheckerResponse+1))
		switch {
		case err != nil:
			return guard.Decision{}, fmt.Errorf("checker: read the answer: %w", err)
		case len(out) > MaxCheckerResponse:
			return guard.Decision{}, fmt.Errorf("checker: the answer passes %d bytes", MaxCheckerResponse)
		case res.StatusCode/100 != 2:
			return guard.Decision{}, fmt.Errorf("checker answered %s", res.Status)
		}
		return decode(out)
	}, nil
}

func lambdaChecker(function string, lambda remote.LambdaInvoker) guard.Func {
	return func(ctx context.Context, s guard.Subject) (guard.Decision, error) {
		if lambda == nil {
			return guard.Decision{}, remote.ErrNoLambdaInvoker
		}
		b, err := body(s)
		if err != nil {
			return guard.Decision{}, err
		}
		res, err := lambda.InvokeLambda(ctx, function, b)
		switch {
		case err != nil:
			return guard.Decision{}, fmt.Errorf("checker %s: %w", function, err)
		case res.FunctionError != "":
			return guard.Decision{}, fmt.Errorf("checker %s failed (%s)", function, res.FunctionError)
		}
		return decode(res.Payload)
	}
}
