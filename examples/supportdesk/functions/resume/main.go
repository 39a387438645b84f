// Command resume is the support desk's resume function: SQS wakes run its turns.
package main

import (
	"context"
	"github.com/baton-run/baton/providers/mcp"
	"log"

	"github.com/aws/aws-lambda-go/lambda"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/examples/supportdesk"
)

func main() {
	cfg, err := supportdesk.FromEnv()
	if err != nil {
		log.Fatal(err)
	}
	cfg.MCP = mcp.Client() // the CRM's tools are reached over MCP
	app, err := baton.New(context.Background(), cfg)
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(app.ResumeHandler())
}
