package provision

import (
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Decode parses a CloudFormation/SAM YAML template into plain Go values
// (map[string]any, []any, string, int, float64, bool, nil), with short-form
// intrinsic tags rewritten to their long form: `!Ref X` becomes
// {"Ref": "X"}, `!GetAtt A.B` becomes {"Fn::GetAtt": ["A", "B"]}, `!Sub s`
// becomes {"Fn::Sub": "s"}, and so on.
func Decode(tmpl []byte) (map[string]any, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(tmpl, &doc); err != nil {
		return nil, fmt.Errorf("provision: parse template YAML: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, errors.New("provision: template is not a single YAML document")
	}
	v, err := decodeNode(doc.Content[0])
	if err != nil {
		return nil, fmt.Errorf("provision: decode template: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("provision: template is not a YAML mapping")
	}
	return m, nil
}

// decodeNode converts one YAML node, expanding a short-form intrinsic tag.
func decodeNode(n *yaml.Node) (any, error) {
	if n.Kind == yaml.AliasNode {
		return decodeNode(n.Alias)
	}
	if fn, ok := intrinsicTag(n.Tag); ok {
		return decodeIntrinsic(fn, n)
	}
	return decodePlain(n)
}

// intrinsicTag maps a local YAML tag such as "!GetAtt" to the long-form key
// ("Fn::GetAtt"). Standard tags (!!str ...) are not intrinsics.
func intrinsicTag(tag string) (string, bool) {
	if !strings.HasPrefix(tag, "!") || strings.HasPrefix(tag, "!!") {
		return "", false
	}
	name := tag[1:]
	switch name {
	case "Ref", "Condition":
		return name, true
	default:
		return "Fn::" + name, true
	}
}

func decodeIntrinsic(fn string, n *yaml.Node) (any, error) {
	if n.Kind == yaml.ScalarNode {
		if fn == "Fn::GetAtt" {
			res, attr, ok := strings.Cut(n.Value, ".")
			if !ok {
				return nil, fmt.Errorf("line %d: !GetAtt %q is not Resource.Attribute", n.Line, n.Value)
			}
			return map[string]any{fn: []any{res, attr}}, nil
		}
		return map[string]any{fn: n.Value}, nil
	}
	v, err := decodePlain(n)
	if err != nil {
		return nil, err
	}
	return map[string]any{fn: v}, nil
}

// decodePlain converts a node ignoring its own (intrinsic) tag; children are
// decoded normally.
func decodePlain(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: mapping key is not a scalar", k.Line)
			}
			if k.Value == "<<" && k.Tag == "!!merge" {
				return nil, fmt.Errorf("line %d: YAML merge keys are not supported by CloudFormation", k.Line)
			}
			if _, dup := m[k.Value]; dup {
				return nil, fmt.Errorf("line %d: duplicate key %q", k.Line, k.Value)
			}
			dv, err := decodeNode(v)
			if err != nil {
				return nil, err
			}
			m[k.Value] = dv
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			dv, err := decodeNode(c)
			if err != nil {
				return nil, err
			}
			s = append(s, dv)
		}
		return s, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int", "!!float", "!!bool", "!!null":
			var v any
			if err := n.Decode(&v); err != nil {
				return nil, fmt.Errorf("line %d: %w", n.Line, err)
			}
			return v, nil
		default:
			// !!str, !!timestamp (e.g. an unquoted 2012-10-17) and the
			// scalar content of an intrinsic tag all stay strings.
			return n.Value, nil
		}
	case yaml.AliasNode:
		return decodeNode(n.Alias)
	default:
		return nil, fmt.Errorf("line %d: unexpected YAML node kind %d", n.Line, n.Kind)
	}
}
