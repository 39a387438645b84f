// Command resume is the support desk's resume function: SQS wakes run its turns.
package main

import (
	"log"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/examples/supportdesk"
	"github.com/baton-run/baton/providers/mcp"
)

func main() {
	cfg, err := supportdesk.FromEnv()
	if err != nil {
		log.Fatal(err)
	}
	cfg.MCP = mcp.Client() // the CRM's tools are reached over MCP
	baton.Main(baton.ResumeFunction, cfg)
}
