// Command dev runs the support desk on this machine: the emulator, the
// desk agent with its tools and a CRM of its own, and the operator API on
// 127.0.0.1:8080. The model is SUPPORTDESK_MODEL, or DemoScript when unset.
// Run it from the repository: go run ./examples/supportdesk/cmd/dev
package main

import (
	"context"
	"github.com/baton-run/baton/providers/mcp"
	"log"
	"net/http/httptest"
	"os"
	"os/signal"

	"github.com/baton-run/baton/dev"
	"github.com/baton-run/baton/examples/supportdesk"
	"github.com/baton-run/baton/examples/supportdesk/crm"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	crmSrv := httptest.NewServer(crm.New().Handler()) // stands in for your CRM
	defer crmSrv.Close()
	set := supportdesk.SettingsFromEnv()
	if set.Model == "" { // no API key needed to try it
		set.Model = "script:" + supportdesk.DemoScript
	}
	set.CRM = crmSrv.URL
	cfg, err := supportdesk.Config(set, supportdesk.NewShop())
	if err != nil {
		log.Fatal(err)
	}
	cfg.MCP = mcp.Client() // the CRM's tools are reached over MCP
	if err := dev.Run(ctx, cfg, dev.Options{Out: os.Stdout}); err != nil {
		log.Fatal(err)
	}
}
