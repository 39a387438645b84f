// Command tick runs on an EventBridge schedule: it reaps turns whose
// invocation died, denies expired approvals and re-sends lost wakes.
package main

import (
	"os"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/host"
)

func main() {
	host.Main(host.TickFunction, host.Config{Tools: baton.DemoTools(), Metrics: os.Stderr})
}
