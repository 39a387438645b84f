package cli

import (
	"github.com/baton-run/baton/api"
)

// DefaultAPI is the operator API the CLI talks to without --api or
// BATON_API: the one `baton dev` serves.
const DefaultAPI = "http://127.0.0.1:8080"

// newClient is the operator API client at base, sending token (BATON_TOKEN)
// as a bearer token and operator (BATON_OPERATOR) as the dev server's
// X-Baton-Operator. An address that is not an http(s) URL is a usage error.
func newClient(base, token, operator string) (*api.Client, error) {
	cl, err := api.NewClient(base, api.ClientOptions{Token: token, Operator: operator, UserAgent: "baton-cli"})
	if err != nil {
		return nil, usagef("%v", err)
	}
	return cl, nil
}
