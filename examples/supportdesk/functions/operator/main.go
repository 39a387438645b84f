// Command operator is the support desk's operator API behind API Gateway.
package main

import (
	"github.com/baton-run/baton/examples/supportdesk"
	"github.com/baton-run/baton/host"
)

func main() {
	supportdesk.Main(host.OperatorFunction, nil)
}
