package supportdesk

import (
	"os"

	baton "github.com/baton-run/baton"
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
func FromEnv() (baton.Config, error) { return Config(SettingsFromEnv(), NewShop()) }
