// Command tick is the support desk's scheduled tick.
package main

import (
	"github.com/baton-run/baton/examples/supportdesk"
	"github.com/baton-run/baton/host"
)

func main() {
	supportdesk.Main(host.TickFunction, nil)
}
