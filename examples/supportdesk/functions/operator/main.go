// Command operator is the support desk's operator API behind API Gateway.
package main

import (
	"log"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/examples/supportdesk"
)

func main() {
	cfg, err := supportdesk.FromEnv()
	if err != nil {
		log.Fatal(err)
	}
	baton.Main(baton.OperatorFunction, cfg)
}
