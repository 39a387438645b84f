package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func noop(context.Context, Call) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }

const orderSchema = `{
	"type": "object",
	"properties": {
		"items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
		"mode": {"enum": ["fast", "slow"]},
		"n": {"type": "integer", "minimum": 1},
		"v": {"anyOf": [{"type": "string"}, {"type": "number"}]},
		"odd key": {"type": "string"},
		"address": {"type": "object", "properties": {"zip": {"type": "string"}}, "required": ["zip"], "additionalProperties": false}
	},
	"additionalProperties": false
}`

const refsSchema = `{
	"type": "object",
	"$defs": {"pos": {"type": "integer", "minimum": 1}},
	"properties": {
		"qty": {"$ref": "#/$defs/pos"},
		"code": {"type": "string", "pattern": "^[A-Z]+$", "maxLength": 3},
		"pair": {"type": "array", "prefixItems": [{"type": "string"}, {"const": 2}], "items": false}
	},
	"not": {"required": ["forbidden"]}
}`

func registry(t *testing.T) *Registry {
	t.Helper()
	tools := append(Demo(),
		Tool{Name: "order", Schema: json.RawMessage(orderSchema), Run: noop},
		Tool{Name: "free", Run: noop},
		Tool{Name: "refs", Schema: json.RawMessage(refsSchema), Run: noop},
	)
	r, err := NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCheck(t *testing.T) {
	r := registry(t)
	for _, tc := range []struct {
		name, tool, input string
		want              []string // exact problems; nil means valid
		contains          string   // instead of want: one problem containing this
	}{
		{name: "valid", tool: "get_weather", input: `{"city":"Lisbon"}`},
		{name: "valid nested", tool: "order", input: `{"items":[{"name":"a"}],"mode":"fast","n":2,"v":3,"address":{"zip":"1000"}}`},
		{name: "missing", tool: "get_weather", input: `{}`, want: []string{"city: missing required property"}},
		{name: "wrong type", tool: "get_weather", input: `{"city":3}`, want: []string{"city: must be string, got number"}},
		{name: "extra", tool: "get_weather", input: `{"city":"x","zip":1}`, want: []string{"zip: unknown property, not allowed here"}},
		{name: "several sorted", tool: "send_email", input: `{"cc":"x","body":1}`, want: []string{
			"body: must be string, got number",
			"cc: unknown property, not allowed here",
			"subject: missing required property",
			"to: missing required property",
		}},
		{name: "array index", tool: "order", input: `{"items":[{"name":"a"},{}]}`, want: []string{"items[1].name: missing required property"}},
		{name: "nested object", tool: "order", input: `{"address":{"street":"x"}}`, want: []string{
			"address.street: unknown property, not allowed here",
			"address.zip: missing required property",
		}},
		{name: "odd key", tool: "order", input: `{"odd key":1}`, want: []string{`["odd key"]: must be string, got number`}},
		{name: "enum", tool: "order", input: `{"mode":"medium"}`, contains: "mode: value must be one of"},
		{name: "minimum", tool: "order", input: `{"n":0}`, want: []string{"n: must be at least 1, got 0"}},
		{name: "through a ref", tool: "refs", input: `{"qty":0}`, want: []string{"qty: must be at least 1, got 0"}},
		{name: "string keywords", tool: "refs", input: `{"code":"abcd"}`, want: []string{
			"code: must be at most 3 characters, got 4",
			`code: must match the pattern "^[A-Z]+$"`,
		}},
		{name: "tuple", tool: "refs", input: `{"pair":["a",3,true]}`, want: []string{
			"pair[1]: must be 2",
			"pair[2]: not allowed, the array is too long",
		}},
		{name: "a keyword explained by the validator", tool: "refs", input: `{"forbidden":1}`, contains: "input: does not match the schema (not: "},
		{name: "integer", tool: "order", input: `{"n":1.5}`, want: []string{"n: must be integer, got number"}},
		{name: "anyOf", tool: "order", input: `{"v":true}`, contains: "v: must match one of the allowed forms: [v: must be string, got boolean] or [v: must be number, got boolean]"},
		{name: "array input", tool: "get_weather", input: `["Lisbon"]`, want: []string{"input: must be a JSON object, got array"}},
		{name: "string input", tool: "get_weather", input: `"Lisbon"`, want: []string{"input: must be a JSON object, got string"}},
		{name: "null input", tool: "free", input: `null`, want: []string{"input: must be a JSON object, got null"}},
		{name: "empty input", tool: "free", input: ``, contains: "input: not valid JSON"},
		{name: "broken JSON", tool: "get_weather", input: `{"city":`, contains: "input: not valid JSON"},
		{name: "trailing data", tool: "get_weather", input: `{"city":"x"} {}`, contains: "input: not valid JSON"},
		{name: "a number beyond float64 is still a number", tool: "order", input: `{"v":1e400}`},
		{name: "a tiny number is still a number", tool: "order", input: `{"v":-4.9e-330,"n":123456789012345678901234567890}`},
		{name: "a huge number is checked too", tool: "order", input: `{"n":-1e400}`, contains: "n: must be at least 1"},
		{name: "no schema accepts any object", tool: "free", input: `{"anything":[1,2]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := r.Check(tc.tool, json.RawMessage(tc.input))
			if tc.want == nil && tc.contains == "" {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("Check = %v (%T), want *InputError", err, err)
			}
			if ie.Tool != tc.tool {
				t.Errorf("Tool = %q, want %q", ie.Tool, tc.tool)
			}
			if tc.want != nil && !slices.Equal(ie.Problems, tc.want) {
				t.Errorf("Problems = %q\nwant       %q", ie.Problems, tc.want)
			}
			if tc.contains != "" && (len(ie.Problems) != 1 || !strings.Contains(ie.Problems[0], tc.contains)) {
				t.Errorf("Problems = %q, want one containing %q", ie.Problems, tc.contains)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.tool) || !strings.Contains(msg, ie.Problems[0]) {
				t.Errorf("message %q does not name the tool and the problem", msg)
			}
		})
	}
}

func TestCheckUnknownTool(t *testing.T) {
	err := registry(t).Check("nope", json.RawMessage(`{}`))
	var ie *InputError
	if err == nil || errors.As(err, &ie) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("Check(unknown) = %v, want a plain error naming the tool", err)
	}
}

// TestSchemas shows which schemas compile. A registry compiles each
// tool's schema on its first Check, not when it is built: NewRegistry
// takes a schema that does not compile, and that tool's calls fail with a
// plain error naming it (not an InputError: the input is not at fault).
func TestSchemas(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		ok           bool
	}{
		{"object", `{"type":"object"}`, true},
		{"boolean schema", `true`, true},
		{"local ref", `{"type":"object","$defs":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/s"}}}`, true},
		{"draft 7", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{}}`, true},
		{"draft 4", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"a":{"type":"string"}}}`, true},
		{"draft 2019-09", `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object"}`, true},
		{"unknown dialect", `{"$schema":"https://example.com/my-dialect","type":"object"}`, false},
		{"bad type", `{"type":"objekt"}`, false},
		{"bad nested type", `{"type":"object","properties":{"a":{"type":["string","text"]}}}`, false},
		{"bad keyword value", `{"type":"object","required":"city"}`, false},
		{"not JSON", `{"type":`, false},
		{"remote ref", `{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`, false},
		{"file ref", `{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`, false},
		{"dangling local ref", `{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cerr := CheckSchema("my_tool", json.RawMessage(tc.schema))
			r, err := NewRegistry(Demo()[0], Tool{Name: "my_tool", Schema: json.RawMessage(tc.schema), Run: noop})
			if err != nil {
				t.Fatalf("NewRegistry = %v; it compiles no schema", err)
			}
			check := r.Check("my_tool", json.RawMessage(`{"a":"x"}`))
			if tc.ok {
				if cerr != nil || check != nil {
					t.Fatalf("CheckSchema = %v, Check = %v; want both nil", cerr, check)
				}
				return
			}
			if cerr == nil || !strings.Contains(cerr.Error(), `"my_tool"`) {
				t.Fatalf("CheckSchema = %v, want an error naming my_tool", cerr)
			}
			var ie *InputError
			if check == nil || errors.As(check, &ie) || check.Error() != cerr.Error() {
				t.Errorf("Check = %v, want CheckSchema's error %v", check, cerr)
			}
		})
	}
}

// TestCheckCompiledOnce shows the registry validates with the schema it
// compiled, not with the tool's Schema bytes at call time.
func TestCheckCompiledOnce(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","required":["a"]}`)
	r, err := NewRegistry(Tool{Name: "t", Schema: schema, Run: noop})
	if err != nil {
		t.Fatal(err)
	}
	copy(schema, `{"type":"object","required":["b"]}`)
	if err := r.Check("t", json.RawMessage(`{"a":1}`)); err != nil {
		t.Fatalf("Check = %v, want nil", err)
	}
}

type truncated struct {
	Truncated     bool   `json:"truncated"`
	OriginalBytes int    `json:"originalBytes"`
	Head          string `json:"head"`
}

func checkTruncated(t *testing.T, in []byte, max int) truncated {
	t.Helper()
	out, cut := Truncate(in, max)
	if !cut {
		t.Fatalf("Truncate(%d bytes, %d) did not cut", len(in), max)
	}
	if !json.Valid(out) {
		t.Fatalf("Truncate output is not JSON: %s", out)
	}
	if len(out) > max+65 {
		t.Fatalf("Truncate output is %d bytes, cap %d+65", len(out), max)
	}
	var got truncated
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	if !got.Truncated || got.OriginalBytes != len(in) {
		t.Errorf("got %+v, want truncated with originalBytes %d", got, len(in))
	}
	if !utf8.ValidString(got.Head) {
		t.Errorf("head is not valid UTF-8: %q", got.Head)
	}
	return got
}

func TestTruncate(t *testing.T) {
	t.Run("within cap unchanged", func(t *testing.T) {
		in := json.RawMessage(`{"a":"bcd"}`)
		for _, max := range []int{len(in), len(in) + 1, 1 << 20} {
			out, cut := Truncate(in, max)
			if cut || !bytes.Equal(out, in) {
				t.Errorf("Truncate(%d) = %s, %v; want the input unchanged", max, out, cut)
			}
		}
	})
	t.Run("ascii", func(t *testing.T) {
		in := []byte(`{"data":"` + strings.Repeat("x", 1000) + `"}`)
		got := checkTruncated(t, in, 100)
		// The head is the output's start, as long as its escaped form fits.
		if !strings.HasPrefix(string(in), got.Head) || len(got.Head) < 90 || len(got.Head) > 100 {
			t.Errorf("head %q (%d bytes) is not a ~100-byte prefix", got.Head, len(got.Head))
		}
	})
	t.Run("one byte over", func(t *testing.T) {
		in := []byte(strings.Repeat("7", 101))
		got := checkTruncated(t, in, 100)
		if got.Head != strings.Repeat("7", 100) {
			t.Errorf("head = %q", got.Head)
		}
	})
	t.Run("multibyte boundary", func(t *testing.T) {
		in := []byte(`"` + strings.Repeat("é€😀", 200) + `"`)
		for max := 10; max < 30; max++ {
			got := checkTruncated(t, in, max)
			if !strings.HasPrefix(string(in), got.Head) {
				t.Errorf("max %d: head %q is not a prefix", max, got.Head)
			}
			if len(got.Head) > max || len(got.Head) < max-4 {
				t.Errorf("max %d: head is %d bytes", max, len(got.Head))
			}
		}
	})
	t.Run("escapes count against the cap", func(t *testing.T) {
		in := []byte(strings.Repeat(`"\`+"\n\x01<>&\u2028", 500))
		got := checkTruncated(t, in, 300)
		if !strings.HasPrefix(string(in), got.Head) || got.Head == "" {
			t.Errorf("head %q is not a non-empty prefix", got.Head)
		}
	})
	t.Run("invalid utf8", func(t *testing.T) {
		in := bytes.Repeat([]byte{'a', 0xff, 0xc3}, 100)
		got := checkTruncated(t, in, 50)
		if !strings.HasPrefix(got.Head, "a\ufffd\ufffda") {
			t.Errorf("head = %q", got.Head)
		}
	})
	t.Run("zero cap", func(t *testing.T) {
		got := checkTruncated(t, []byte(`{}`), 0)
		if got.Head != "" {
			t.Errorf("head = %q", got.Head)
		}
	})
	t.Run("random", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		alphabet := []string{"a", "\"", "\\", "\n", "\x00", "é", "😀", "\xff", "<", "\u2029", " "}
		for range 300 {
			var sb strings.Builder
			for range 1 + rng.IntN(400) {
				sb.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			in := []byte(sb.String())
			max := rng.IntN(len(in))
			checkTruncated(t, in, max)
		}
	})
}
