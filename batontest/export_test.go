package batontest

import "github.com/baton-run/baton/internal/app"

// Engine is the kit's engine, for the package's own tests of what the kit
// does not cover.
func (k *Kit) Engine() *app.App { return k.engine }
