package declared_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/guard"
	"github.com/baton-run/baton/internal/guard/declared"
	"github.com/baton-run/baton/internal/tool/remote"
)

func decide(t *testing.T, d declared.Decl, text string) guard.Decision {
	t.Helper()
	g, err := d.Build(nil, nil)
	if err != nil {
		t.Fatalf("Build(%+v): %v", d, err)
	}
	got, _ := guard.Run(t.Context(), g, guard.Subject{Text: text})
	return got
}

func TestPatterns(t *testing.T) {
	t.Parallel()
	block := declared.Decl{Name: "cards", Stage: guard.Input, Patterns: []string{`\b\d{4}-\d{4}-\d{4}-\d{4}\b`}, Reason: "no card numbers"}
	if d := decide(t, block, "pay with 1234-5678-9012-3456"); d.Action != guard.Block || d.Reason != "no card numbers" {
		t.Errorf("block: %+v", d)
	}
	if d := decide(t, block, "pay with cash"); d.Action != guard.Allow {
		t.Errorf("allow: %+v", d)
	}
	redact := declared.Decl{Name: "emails", Stage: guard.Output, Patterns: []string{`\S+@\S+`, `\+\d{6,}`}, Action: guard.Redact}
	if d := decide(t, redact, "mail a@b.c or call +4912345678"); d.Action != guard.Redact || d.Text != "mail [redacted] or call [redacted]" {
		t.Errorf("redact: %+v", d)
	}
}

func TestMaxLength(t *testing.T) {
	t.Parallel()
	if d := decide(t, declared.Decl{Name: "len", Stage: guard.Input, MaxLength: 5}, "héllo"); d.Action != guard.Allow {
		t.Errorf("5 characters: %+v", d)
	}
	if d := decide(t, declared.Decl{Name: "len", Stage: guard.Input, MaxLength: 5, Action: guard.Escalate}, "héllo!"); d.Action != guard.Escalate {
		t.Errorf("6 characters: %+v", d)
	}
	if d := decide(t, declared.Decl{Name: "len", Stage: guard.Output, MaxLength: 3, Action: guard.Redact, Replacement: "…"}, "abcdef"); d.Text != "abc…" {
		t.Errorf("cut: %+v", d)
	}
}

func TestHTTPChecker(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in map[string]any
		_ = json.NewDecoder(r.Body).Decode(&in)
		switch text, _ := in["text"].(string); {
		case in["guardrail"] != "moderation":
			http.Error(w, "no guardrail named", http.StatusBadRequest)
		case strings.Contains(text, "bad"):
			_, _ = w.Write([]byte(`{"action":"block","reason":"moderated"}`))
		case strings.Contains(text, "broken"):
			_, _ = w.Write([]byte(`not json`))
		case strings.Contains(text, "down"):
			http.Error(w, "down", http.StatusServiceUnavailable)
		default:
			_, _ = w.Write([]byte(`{"action":"allow"}`))
		}
	}))
	defer srv.Close()
	g, err := declared.Decl{Name: "moderation", Stage: guard.Input, URL: srv.URL, Timeout: "2s"}.Build(srv.Client(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string]guard.Action{"fine": guard.Allow, "bad": guard.Block, "broken": guard.Block, "down": guard.Block} {
		d, err := guard.Run(t.Context(), g, guard.Subject{Text: text})
		if d.Action != want || (text == "bad") != (d.Reason == "moderated") || (text == "broken" || text == "down") != (err != nil) {
			t.Errorf("%s: %+v, %v", text, d, err)
		}
	}
}

type invoker func(ctx context.Context, fn string, payload []byte) (remote.LambdaResult, error)

func (f invoker) InvokeLambda(ctx context.Context, fn string, p []byte) (remote.LambdaResult, error) {
	return f(ctx, fn, p)
}

func TestLambdaChecker(t *testing.T) {
	t.Parallel()
	var got []byte
	inv := invoker(func(_ context.Context, fn string, p []byte) (remote.LambdaResult, error) {
		got = p
		if fn != "checker" {
			return remote.LambdaResult{FunctionError: "Unhandled"}, nil
		}
		return remote.LambdaResult{Payload: []byte(`{"action":"redact","text":"[x]"}`)}, nil
	})
	g, err := declared.Decl{Name: "pii", Stage: guard.Output, Lambda: "checker"}.Build(nil, inv)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := guard.Run(t.Context(), g, guard.Subject{Text: "secret", Step: 2}); err != nil || d.Text != "[x]" {
		t.Fatalf("Run = %+v, %v", d, err)
	}
	if !strings.Contains(string(got), `"text":"secret"`) || !strings.Contains(string(got), `"step":2`) {
		t.Fatalf("payload %s", got)
	}
	none, _ := declared.Decl{Name: "pii", Stage: guard.Output, Lambda: "checker"}.Build(nil, nil)
	if d, err := guard.Run(t.Context(), none, guard.Subject{Text: "x"}); err == nil || d.Action != guard.Block {
		t.Fatalf("no invoker: %+v, %v; want a block", d, err)
	}
}

func TestBuildRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    declared.Decl
		want string
	}{
		{declared.Decl{Name: "a", Stage: guard.Input}, "exactly one"},
		{declared.Decl{Name: "a", Stage: guard.Input, MaxLength: 3, URL: "http://x"}, "exactly one"},
		{declared.Decl{Name: "a", Stage: guard.Input, Patterns: []string{"("}}, "pattern 0"},
		{declared.Decl{Name: "a", Stage: guard.Input, MaxLength: -1}, "positive"},
		{declared.Decl{Name: "a", Stage: guard.Input, URL: "ftp://x"}, "http or https"},
		{declared.Decl{Name: "a", Stage: guard.Input, MaxLength: 3, Action: "shrug"}, "action"},
		{declared.Decl{Name: "a", Stage: guard.Input, MaxLength: 3, Timeout: "soon"}, "timeout"},
		{declared.Decl{Name: "a", Stage: "later", MaxLength: 3}, "stage"},
		{declared.Decl{Name: "a", Stage: guard.Output, MaxLength: 3, Parallel: true}, "parallel"},
	} {
		if _, err := tc.d.Build(nil, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Build(%+v) = %v, want %q", tc.d, err, tc.want)
		}
	}
}
