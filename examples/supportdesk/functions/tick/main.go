// Command tick is the support desk's scheduled tick.
package main

import (
	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/examples/supportdesk"
)

func main() {
	supportdesk.Main(baton.TickFunction, nil)
}
