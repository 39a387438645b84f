package cli

import (
	"context"

	"github.com/baton-run/baton/internal/claims/claimscli"
)

// The claims commands parse their arguments here; what they show and do
// is package claimscli's.

// release asks the operator API to release a grant an ended turn left, or
// the orphan a deleted session left (claimscli.Release).
func (e *env) release(ctx context.Context, args []string) error {
	c := e.flags("release", false)
	pos, err := c.parse(args, 2, false, "SESSION GRANT")
	if err != nil {
		return err
	}
	cl, err := e.client(c)
	if err != nil {
		return err
	}
	return claimscli.Release(ctx, cl, e.stdout, pos[0], pos[1])
}

// orphans lists the caller's orphaned grants: those deleted sessions held
// while their effect may still have run, held until released.
func (e *env) orphans(ctx context.Context, args []string) error {
	c := e.flags("orphans", true)
	c.outputFlag()
	if _, err := c.parse(args, 0, false, "no arguments"); err != nil {
		return err
	}
	if _, err := c.format(); err != nil {
		return err
	}
	cl, err := e.client(c)
	if err != nil {
		return err
	}
	out, err := cl.Orphans(ctx)
	if err != nil {
		return err
	}
	return e.emit(c, out, func() error {
		claimscli.Orphans(e.stdout, out)
		return nil
	})
}
