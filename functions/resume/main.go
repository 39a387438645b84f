// Command resume runs turns. SQS wakes trigger it; it decides from the
// session's facts whether to start, resume or do nothing, and reports
// batch item failures for redelivery.
package main

import (
	"os"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/providers"
)

func main() {
	baton.Main(baton.ResumeFunction, baton.Config{Tools: baton.DemoTools(), Metrics: os.Stderr, Providers: providers.All(), MCP: providers.MCP(), KeyStore: providers.KeyStore(), Lambda: providers.Lambda()})
}
