// Command operator is the operator HTTP API behind its two front doors: a
// Lambda Function URL with RESPONSE_STREAM (streamed answers) and API
// Gateway's HTTP API (buffered). The caller is the sub of the bearer JWT the
// function verifies itself (BATON_JWT_ISSUER, BATON_JWT_AUDIENCE).
package main

import (
	"os"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/providers/mcpserve"
)

func main() {
	host.Main(host.OperatorFunction, host.Config{Tools: baton.DemoTools(), Metrics: os.Stderr, MCPServer: mcpserve.Server()})
}
