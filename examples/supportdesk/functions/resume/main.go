// Command resume is the support desk's resume function: SQS wakes run its turns.
package main

import (
	"github.com/baton-run/baton/examples/supportdesk"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/providers/mcp"
)

func main() {
	supportdesk.Main(host.ResumeFunction, mcp.Client()) // the CRM's tools are reached over MCP
}
