package supportdesk

import (
	"log"
	"os"

	"github.com/baton-run/baton/host"
)

// The environment variables the desk's functions read, besides baton's.
const (
	EnvModel = "SUPPORTDESK_MODEL"   // Settings.Model
	EnvCRM   = "SUPPORTDESK_CRM_URL" // Settings.CRM
)

// SettingsFromEnv reads Settings from the process environment.
func SettingsFromEnv() Settings {
	return Settings{Model: os.Getenv(EnvModel), CRM: os.Getenv(EnvCRM)}
}

// FromEnv is the Config of a deployed function: the settings of the
// environment and a fresh shop.
func FromEnv() (host.Config, error) { return Config(SettingsFromEnv(), NewShop()) }

// Main is the whole main of the desk's function f: the Config of the
// environment (FromEnv) with dialer as its MCP client (the resume
// function reaches the CRM's tools with one; the operator and the tick
// pass nil and link no MCP SDK), started by host.Main.
func Main(f host.Function, dialer host.MCPDialer) {
	cfg, err := FromEnv()
	if err != nil {
		log.Fatal(err)
	}
	cfg.MCP = dialer
	host.Main(f, cfg)
}
