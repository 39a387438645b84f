package provision

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/intrinsics"
)

// Logical ids of the template resources Provision creates.
const (
	TableResource  = "SessionsTable"
	BucketResource = "StreamsBucket"
	QueueResource  = "WakeQueue"
)

// Parse parses the template into goformation's typed model. Intrinsic
// functions are not evaluated: each is rendered as a short-form string such
// as "!Ref SessionsTable", "!GetAtt WakeDLQ.Arn" or "!Sub ${X.Arn}/*", and a
// Ref to AWS::NoValue removes the value. A property whose typed field is not a
// string cannot therefore hold an intrinsic.
func Parse(tmpl []byte) (*cloudformation.Template, error) {
	tree, err := Decode(tmpl)
	if err != nil {
		return nil, err
	}
	return parseTree(tree)
}

func parseTree(tree map[string]any) (*cloudformation.Template, error) {
	data, err := json.Marshal(dropNoValue(tree))
	if err != nil {
		return nil, fmt.Errorf("provision: encode template: %w", err)
	}
	t, err := goformation.ParseJSONWithOptions(data, &intrinsics.ProcessorOptions{
		IntrinsicHandlerOverrides: renderHandlers(),
	})
	if err != nil {
		return nil, fmt.Errorf("provision: parse template: %w", err)
	}
	return t, nil
}

// isNoValue reports whether v is {"Ref": "AWS::NoValue"}.
func isNoValue(v any) bool {
	m, ok := v.(map[string]any)
	return ok && len(m) == 1 && m["Ref"] == "AWS::NoValue"
}

// dropNoValue returns a copy of v without the map entries and list elements
// that are {"Ref": "AWS::NoValue"}, as CloudFormation removes them.
func dropNoValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if !isNoValue(e) {
				out[k] = dropNoValue(e)
			}
		}
		return out
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			if !isNoValue(e) {
				out = append(out, dropNoValue(e))
			}
		}
		return out
	default:
		return v
	}
}

// renderHandlers returns handlers that turn every intrinsic goformation
// knows into a readable short-form string instead of evaluating it.
func renderHandlers() map[string]intrinsics.IntrinsicHandler {
	names := []string{
		"Ref", "Fn::Base64", "Fn::And", "Fn::Equals", "Fn::If", "Fn::Not", "Fn::Or",
		"Fn::FindInMap", "Fn::GetAtt", "Fn::GetAZs", "Fn::ImportValue", "Fn::Join",
		"Fn::Select", "Fn::Split", "Fn::Sub", "Fn::Cidr", "Fn::Transform",
	}
	h := make(map[string]intrinsics.IntrinsicHandler, len(names))
	for _, name := range names {
		h[name] = renderIntrinsic
	}
	return h
}

func renderIntrinsic(name string, input any, _ any) any {
	short := "!" + strings.TrimPrefix(name, "Fn::")
	switch v := input.(type) {
	case string:
		if name == "Ref" && v == "AWS::NoValue" {
			return nil
		}
		return short + " " + v
	case []any:
		if name == "Fn::GetAtt" {
			parts := make([]string, 0, len(v))
			for _, p := range v {
				parts = append(parts, fmt.Sprint(p))
			}
			return short + " " + strings.Join(parts, ".")
		}
	}
	b, err := json.Marshal(input)
	if err != nil {
		return short + " " + fmt.Sprint(input)
	}
	return short + " " + string(b)
}

// Reference is one name an intrinsic function points at.
type Reference struct {
	// Func is "Ref", "Fn::GetAtt" or "Fn::Sub".
	Func string
	// Target is the logical id, parameter or pseudo parameter (AWS::Region).
	Target string
	// Attribute is the attribute of a GetAtt or of a ${Res.Attr} in a Sub.
	Attribute string
	// Path locates the intrinsic in the template, e.g.
	// "Resources.WakeQueue.Properties.RedrivePolicy.deadLetterTargetArn".
	Path string
}

// subVar matches ${Name} and ${Name.Attr} in a Fn::Sub string; ${!Literal} is
// an escape and is skipped by the caller.
var subVar = regexp.MustCompile(`\$\{([^}]*)\}`)

// References lists every name the template's Ref, Fn::GetAtt and Fn::Sub
// intrinsics point at, sorted by path. Variables a Fn::Sub defines in its own
// map are not references.
func References(tmpl []byte) ([]Reference, error) {
	tree, err := Decode(tmpl)
	if err != nil {
		return nil, err
	}
	var refs []Reference
	collectRefs(tree, "", &refs)
	sort.SliceStable(refs, func(i, j int) bool { return refs[i].Path < refs[j].Path })
	return refs, nil
}

func collectRefs(v any, path string, refs *[]Reference) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			val := x[k]
			switch k {
			case "Ref":
				if s, ok := val.(string); ok {
					*refs = append(*refs, Reference{Func: k, Target: s, Path: path})
					continue
				}
			case "Fn::GetAtt":
				if s, ok := val.([]any); ok && len(s) == 2 {
					res, _ := s[0].(string)
					attr := fmt.Sprint(s[1])
					*refs = append(*refs, Reference{Func: k, Target: res, Attribute: attr, Path: path})
					collectRefs(s[1], join(path, k), refs) // the attribute may be a Ref
					continue
				}
			case "Fn::Sub":
				subRefs(val, path, refs)
				continue
			}
			collectRefs(val, join(path, k), refs)
		}
	case []any:
		for i, e := range x {
			collectRefs(e, fmt.Sprintf("%s[%d]", path, i), refs)
		}
	}
}

func subRefs(val any, path string, refs *[]Reference) {
	var str string
	local := map[string]bool{}
	switch s := val.(type) {
	case string:
		str = s
	case []any:
		if len(s) > 0 {
			str, _ = s[0].(string)
		}
		if len(s) > 1 {
			if m, ok := s[1].(map[string]any); ok {
				for k, v := range m {
					local[k] = true
					collectRefs(v, join(join(path, "Fn::Sub"), k), refs)
				}
			}
		}
	}
	for _, m := range subVar.FindAllStringSubmatch(str, -1) {
		name := strings.TrimSpace(m[1])
		if strings.HasPrefix(name, "!") || local[name] {
			continue
		}
		target, attr, _ := strings.Cut(name, ".")
		if strings.HasPrefix(name, "AWS::") {
			target, attr = name, ""
		}
		*refs = append(*refs, Reference{Func: "Fn::Sub", Target: target, Attribute: attr, Path: path})
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
