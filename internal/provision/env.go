package provision

import (
	"fmt"
	"maps"
)

// FunctionEnv returns the effective environment of every
// AWS::Serverless::Function in the template, keyed by logical id: the
// Globals.Function variables overlaid with the function's own. Intrinsic
// values are rendered as strings, e.g. BATON_TABLE: "!Ref SessionsTable".
func FunctionEnv(tmpl []byte) (map[string]map[string]string, error) {
	t, err := Parse(tmpl)
	if err != nil {
		return nil, err
	}
	base := map[string]string{}
	if g, err := t.GetServerlessGlobalFunction(); err == nil && g.Environment != nil {
		maps.Copy(base, g.Environment.Variables)
	}
	fns := t.GetAllServerlessFunctionResources()
	if len(fns) == 0 {
		return nil, fmt.Errorf("provision: template declares no AWS::Serverless::Function")
	}
	out := make(map[string]map[string]string, len(fns))
	for id, fn := range fns {
		env := maps.Clone(base)
		if fn.Environment != nil {
			maps.Copy(env, fn.Environment.Variables)
		}
		out[id] = env
	}
	return out, nil
}
