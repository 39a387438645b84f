// Command operator is the support desk's operator API behind API Gateway.
package main

import (
	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/examples/supportdesk"
)

func main() {
	supportdesk.Main(baton.OperatorFunction, nil)
}
