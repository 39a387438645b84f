// Command tick runs on an EventBridge schedule: it reaps turns whose
// invocation died, denies expired approvals and re-sends lost wakes.
package main

import (
	"os"

	baton "github.com/baton-run/baton"
)

func main() {
	baton.Main(baton.TickFunction, baton.Config{Tools: baton.DemoTools(), Metrics: os.Stderr})
}
