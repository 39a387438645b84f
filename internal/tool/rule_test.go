package tool_test

import (
	"encoding/json"
	"math"
	"path"
	"reflect"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/tool"
)

const (
	etc    = `{"pathPrefix":{"field":"path","prefix":"/etc"}}`
	over   = `{"over":{"field":"amount","limit":100}}`
	both   = `{"pathPrefix":{"field":"path","prefix":"/etc"},"over":{"field":"amount","limit":100}}`
	relSrc = `{"pathPrefix":{"field":"path","prefix":"src/secret"}}`
)

// TestRuleNeeds: a rule asks unless it can read its field, exactly once,
// under exactly its name, as the type it expects, and prove the call
// outside it.
func TestRuleNeeds(t *testing.T) {
	for _, tc := range []struct {
		rule, input string
		want        bool
	}{
		{`"always"`, `{}`, true},
		{`"never"`, `{"path":"/etc/passwd"}`, false},
		{`"never"`, `not json`, false},

		// Paths provably outside the prefix pass.
		{etc, `{"path":"/tmp/x"}`, false},
		{etc, `{"path":"/etcetera/x"}`, false},
		{etc, `{"path":"/tmp/./x//y/"}`, false},
		{etc, `{"path":"/tmp/x","other":"/etc/passwd"}`, false},
		// Under it, however written.
		{etc, `{"path":"/etc/passwd"}`, true},
		{etc, `{"path":"/etc"}`, true},
		{etc, `{"path":"/etc/"}`, true},
		{etc, `{"path":"//etc"}`, true},
		{etc, `{"path":"//etc/./passwd"}`, true},
		{etc, `{"path":"/./etc/passwd"}`, true},
		{etc, `{"path":"/etc/../etc/passwd"}`, true},
		{etc, `{"path":"/tmp/../etc/x"}`, true},
		{etc, `{"path":"/ETC/passwd"}`, true},
		{etc, `{"path":"/Etc/passwd"}`, true},
		{etc, `{"path":"\/etc\/passwd"}`, true},
		{etc, `{"\u0070ath":"/etc/passwd"}`, true}, // an escaped key is the key
		// Not provably outside: ".." (a link may lead anywhere), relative,
		// escapes a server may decode, control characters.
		{etc, `{"path":"/tmp/../x"}`, true},
		{etc, `{"path":"/tmp/link/../../x"}`, true},
		{etc, `{"path":"../etc/x"}`, true},
		{etc, `{"path":"etc/passwd"}`, true},
		{etc, `{"path":""}`, true},
		{etc, `{"path":"/%65tc/passwd"}`, true},
		{etc, `{"path":"\\etc\\passwd"}`, true},
		{etc, `{"path":"/tmp\\..\\etc"}`, true},
		{etc, `{"path":"/tmp/x\u0000/etc"}`, true},
		{etc, `{"path":"/tmp/\n"}`, true},
		{etc, `{"path":"/tmp/\u0085x"}`, true},
		// A relative prefix: an absolute path could be under it.
		{relSrc, `{"path":"docs/x"}`, false},
		{relSrc, `{"path":"src/secret/key"}`, true},
		{relSrc, `{"path":"SRC/Secret"}`, true},
		{relSrc, `{"path":"/work/src/secret/key"}`, true},
		{relSrc, `{"path":"./src/secret"}`, true},
		// The field missing, in another case, twice, or not a string.
		{etc, `{}`, true},
		{etc, `{"other":"/etc/passwd"}`, true},
		{etc, `{"Path":"/etc/passwd"}`, true},
		{etc, `{"PATH":"/tmp/x"}`, true},
		{etc, `{"path":"/tmp/x","Path":"/etc/passwd"}`, true},
		{etc, `{"path":"/tmp/x","path":"/etc/passwd"}`, true},
		{etc, `{"path":"/etc/passwd","path":"/tmp/x"}`, true},
		{etc, `{"path":["/etc/passwd"]}`, true},
		{etc, `{"path":["/tmp/x"]}`, true},
		{etc, `{"path":{"name":"/etc/passwd"}}`, true},
		{etc, `{"opts":{"path":"/etc/passwd"}}`, true},
		{etc, `{"path":null}`, true},
		{etc, `{"path":7}`, true},
		{etc, `{"path":true}`, true},
		// Input that is not one object.
		{etc, `{"path":`, true},
		{etc, `["/etc/passwd"]`, true},
		{etc, `null`, true},
		{etc, `{"path":"/tmp/x"} {"path":"/etc"}`, true},
		{etc, ``, true},

		// Numbers at or below the limit pass, compared exactly.
		{over, `{"amount":50}`, false},
		{over, `{"amount":100}`, false},
		{over, `{"amount":100.0}`, false},
		{over, `{"amount":1e2}`, false},
		{over, `{"amount":-1e400}`, false},
		{over, `{"amount":99.99999999999999999999}`, false},
		{over, `{"amount":50,"other":500}`, false},
		{over, `{"amount":150}`, true},
		{over, `{"amount":100.01}`, true},
		{over, `{"amount":100.000000000000000000001}`, true}, // a float64 reads 100
		{over, `{"amount":1e400}`, true},
		{over, `{"amount":100e99999}`, true},
		{over, `{"amount":1000000000000000000000000000000000000000}`, true},
		// Not a number.
		{over, `{"amount":"150"}`, true},
		{over, `{"amount":"50"}`, true},
		{over, `{"amount":null}`, true},
		{over, `{"amount":[250]}`, true},
		{over, `{"amount":[50]}`, true},
		{over, `{"amount":{"value":250}}`, true},
		{over, `{"amount":false}`, true},
		// Missing, in another case, nested, or twice.
		{over, `{}`, true},
		{over, `{"Amount":250}`, true},
		{over, `{"AMOUNT":50}`, true},
		{over, `{"amount":50,"Amount":250}`, true},
		{over, `{"Amount":250,"amount":50}`, true},
		{over, `{"amount":50,"amount":250}`, true},
		{over, `{"amount":250,"amount":50}`, true},
		{over, `{"payment":{"amount":250}}`, true},
		{over, `{"amount":`, true},
		{over, ``, true},

		{both, `{"path":"/tmp","amount":500}`, true},
		{both, `{"path":"/etc/x","amount":5}`, true},
		{both, `{"path":"/tmp","amount":5}`, false},
		{both, `{"path":"/tmp"}`, true},
		{both, `{"amount":5}`, true},
	} {
		var r tool.Rule
		if err := json.Unmarshal([]byte(tc.rule), &r); err != nil {
			t.Fatalf("rule %s: %v", tc.rule, err)
		}
		if got := r.Needs(json.RawMessage(tc.input)); got != tc.want {
			t.Errorf("rule %s, input %s: needs = %v, want %v", tc.rule, tc.input, got, tc.want)
		}
	}
}

// TestRuleFoldsCaseByUnicode: a key or path element that case-folds to
// the rule's (the Kelvin sign folds to k) is caught, though their UTF-8
// lengths differ.
func TestRuleFoldsCaseByUnicode(t *testing.T) {
	kube := tool.Rule{PathPrefix: &tool.PrefixRule{Field: "path", Prefix: "/kube"}}
	if !kube.Needs(json.RawMessage(`{"path":"/\u212aube/config"}`)) {
		t.Error("a path under the prefix with a Kelvin sign for k passed")
	}
	kind := tool.Rule{Over: &tool.OverRule{Field: "kilos", Limit: 1}}
	if !kind.Needs(json.RawMessage(`{"kilos":0,"\u212ailos":9}`)) {
		t.Error("a key with a Kelvin sign for k passed beside the exact key")
	}
}

// TestRuleValidate: a rule that could not decide is refused, and asks for
// every call if used anyway.
func TestRuleValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		r    tool.Rule
		want string
	}{
		"empty":            {tool.Rule{}, "needs pathPrefix or over"},
		"always and never": {tool.Rule{Always: true, Never: true}, "both always and never"},
		"never and over":   {tool.Rule{Never: true, Over: &tool.OverRule{Field: "a"}}, "takes no pathPrefix or over"},
		"over no field":    {tool.Rule{Over: &tool.OverRule{Limit: 3}}, "over needs a field"},
		"over NaN":         {tool.Rule{Over: &tool.OverRule{Field: "a", Limit: math.NaN()}}, "not a finite number"},
		"over +Inf":        {tool.Rule{Over: &tool.OverRule{Field: "a", Limit: math.Inf(1)}}, "not a finite number"},
		"prefix no field":  {tool.Rule{PathPrefix: &tool.PrefixRule{Prefix: "/etc"}}, "pathPrefix needs a field"},
		"prefix empty":     {tool.Rule{PathPrefix: &tool.PrefixRule{Field: "p"}}, "pathPrefix needs a prefix"},
	} {
		err := tc.r.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate = %v, want %q", name, err, tc.want)
		}
		if !tc.r.Needs(json.RawMessage(`{"a":1,"p":"/tmp"}`)) {
			t.Errorf("%s: an invalid rule does not ask", name)
		}
	}
	for _, bad := range []string{`{}`, `"sometimes"`,
		`{"Never":true}`, `{"over":{"field":"a","limit":1},"extra":1}`, `{"pathPrefix":{"field":"p","prefix":""}}`} {
		var r tool.Rule
		if err := json.Unmarshal([]byte(bad), &r); err == nil {
			t.Errorf("rule %s parsed as %+v", bad, r)
		}
	}
}

// TestAnyRule: any rule asks; no rule asks for everything.
func TestAnyRule(t *testing.T) {
	p := tool.AnyRule(tool.Rule{Over: &tool.OverRule{Field: "amount", Limit: 100}},
		tool.Rule{PathPrefix: &tool.PrefixRule{Field: "path", Prefix: "/etc"}})
	if p(json.RawMessage(`{"amount":5,"path":"/tmp"}`)) || !p(json.RawMessage(`{"amount":500,"path":"/tmp"}`)) ||
		!p(json.RawMessage(`{"amount":5,"path":"/etc/x"}`)) {
		t.Error("AnyRule does not ask when one rule does, or asks when none does")
	}
	if !tool.AnyRule()(json.RawMessage(`{}`)) {
		t.Error("AnyRule() does not ask")
	}
}

// TestRuleRoundTrips: a rule written as JSON reads back the same.
func TestRuleRoundTrips(t *testing.T) {
	for _, in := range []string{`"always"`, `"never"`, etc, over, both} {
		var r, back tool.Rule
		if err := json.Unmarshal([]byte(in), &r); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(r, back) {
			t.Errorf("%s wrote %s, read back %+v (%v)", in, b, back, err)
		}
	}
}

// FuzzRuleNeeds: whatever the input, a call a rule lets run is one that
// Go's own decoding (case-insensitive into a struct, exact into a map)
// reads as under the limit and outside the prefix.
func FuzzRuleNeeds(f *testing.F) {
	for _, s := range []string{`{"amount":50,"path":"/tmp/x"}`, `{"Amount":250}`, `{"amount":"250"}`,
		`{"amount":50,"amount":250}`, `{"path":"/etc/../etc"}`, `{"path":["/etc"]}`, `{"amount":1e400}`,
		`{"amount":100.0000000000000000001,"path":"/tmp"}`, `{"\u0061mount":250}`, `{"path":"/\u212aube"}`} {
		f.Add(s)
	}
	r := tool.AnyRule(tool.Rule{Over: &tool.OverRule{Field: "amount", Limit: 100}},
		tool.Rule{PathPrefix: &tool.PrefixRule{Field: "path", Prefix: "/etc"}})
	f.Fuzz(func(t *testing.T, input string) {
		if r(json.RawMessage(input)) {
			return
		}
		var in struct {
			Amount float64 `json:"amount"`
			Path   string  `json:"path"`
		}
		if err := json.Unmarshal([]byte(input), &in); err != nil {
			t.Fatalf("%s passed, but does not decode: %v", input, err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(input), &m); err != nil {
			t.Fatalf("%s passed, but does not decode as a map: %v", input, err)
		}
		a, _ := m["amount"].(float64)
		p, _ := m["path"].(string)
		if in.Amount > 100 || a > 100 || in.Path != p || in.Amount != a {
			t.Fatalf("%s passed, read as amount %v (map %v), path %q (map %q)", input, in.Amount, a, in.Path, p)
		}
		lp := strings.ToLower(path.Clean(p))
		if lp == "/etc" || strings.HasPrefix(lp, "/etc/") || !strings.HasPrefix(lp, "/") || strings.Contains(p, "..") {
			t.Fatalf("%s passed with path %q", input, p)
		}
	})
}

func BenchmarkRuleNeeds(b *testing.B) {
	r := tool.AnyRule(tool.Rule{Over: &tool.OverRule{Field: "amount", Limit: 100}},
		tool.Rule{PathPrefix: &tool.PrefixRule{Field: "path", Prefix: "/etc"}})
	in := json.RawMessage(`{"order":"A-1002","amount":42.5,"path":"/srv/data/report.csv","note":"refund for a damaged item"}`)
	for b.Loop() {
		if r(in) {
			b.Fatal("asks")
		}
	}
}
