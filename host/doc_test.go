package host_test

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/baton-run/baton/host"
)

// TestDocListsTheFields: Config and Resources are defined in an internal
// package, so go doc of package host shows no fields but the list in
// their doc comments; that list names every field, in order.
func TestDocListsTheFields(t *testing.T) {
	src, err := os.ReadFile("host.go")
	if err != nil {
		t.Fatal(err)
	}
	for name, typ := range map[string]reflect.Type{"Config": reflect.TypeFor[host.Config](), "Resources": reflect.TypeFor[host.Resources]()} {
		var want []string
		for f := range typ.Fields() {
			if f.IsExported() {
				want = append(want, f.Name)
			}
		}
		if got := documented(string(src), name); !slices.Equal(got, want) {
			t.Errorf("%s: the doc comment lists %q, the type has %q", name, got, want)
		}
	}
}

// documented is the fields the doc comment of type name lists: the code
// block before its declaration, each line's names before their type.
func documented(src, name string) []string {
	before, _, _ := strings.Cut(src, "\ntype "+name+" = ")
	var names []string
	lines := strings.Split(before, "\n")
	for i := len(lines) - 1; i >= 0 && strings.HasPrefix(lines[i], "//"); i-- {
		code, ok := strings.CutPrefix(lines[i], "//\t")
		if !ok {
			continue
		}
		decl, _, _ := strings.Cut(code, "//")
		tokens := strings.Fields(strings.ReplaceAll(decl, ",", " "))
		if len(tokens) < 2 {
			continue
		}
		these := tokens[:len(tokens)-1] // the last is the type
		names = append(these, names...)
	}
	return names
}
