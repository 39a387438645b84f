package agents

import (
	"fmt"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/tool"
)

// checkClaims checks a declared tool's claims: only a side effect claims,
// each claim is well formed, and its field is a string property of the
// tool's input schema (already parsed as schema).
func (d Decl) checkClaims(schema map[string]any) error {
	if len(d.Claims) == 0 {
		return nil
	}
	if e := tool.Effect(d.Effect); e != tool.Write && e != tool.External {
		return fmt.Errorf("tool %q: claims: only a write or external tool claims resources", d.Name)
	}
	if err := claims.CheckStatic(d.Claims); err != nil {
		return fmt.Errorf("tool %q: claims: %w", d.Name, err)
	}
	props, _ := schema["properties"].(map[string]any)
	for _, c := range d.Claims {
		p, _ := props[c.Field].(map[string]any)
		if p == nil || p["type"] != "string" {
			return fmt.Errorf("tool %q: claims: field %q is not a string property of the input schema", d.Name, c.Field)
		}
	}
	return nil
}
