package agents

import (
	"fmt"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/tool"
)

// checkClaims checks a declared tool's claims: only a side effect claims,
// and each claim is well formed. That each claim's field is a string
// property of the tool's input schema is checked with the agent's tools,
// for Go tools alike (agentspec.Assemble).
func (d Decl) checkClaims() error {
	if len(d.Claims) == 0 {
		return nil
	}
	if e := tool.Effect(d.Effect); e != tool.Write && e != tool.External {
		return fmt.Errorf("tool %q: claims: only a write or external tool claims resources", d.Name)
	}
	if err := claims.CheckStatic(d.Claims); err != nil {
		return fmt.Errorf("tool %q: claims: %w", d.Name, err)
	}
	return nil
}
