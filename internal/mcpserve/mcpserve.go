package mcpserve

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/baton-run/baton/internal/session"
)

// The paths the endpoint serves.
const (
	// Path is the MCP endpoint (Streamable HTTP).
	Path = "/mcp"
	// MetadataPath is the OAuth protected-resource metadata (RFC 9728)
	// that names the deployment's JWT issuer; it is served at
	// MetadataPath+Path too, the form clients try first.
	MetadataPath = "/.well-known/oauth-protected-resource"
)

// Env is the environment variable that chooses the agents served
// (Select): a comma-separated list of agent names, or "*" for all; unset
// or empty serves none.
const Env = "BATON_MCP_AGENTS"

// DefaultHold is how long a call without a task, and a tasks/result,
// waits for the turn when Config.Hold is 0.
const DefaultHold = 25 * time.Second

// Config configures the MCP endpoint.
type Config struct {
	// Sessions commits and loads the sessions each call runs in.
	Sessions *session.Store
	// Agents are the agents served, each as a tool of its name.
	Agents []string
	// Describe gives an agent's tool description; nil or "" describes it
	// generically.
	Describe func(agent string) string
	// Identity names a request's caller; false answers 401 with the
	// WWW-Authenticate header that points to the metadata.
	Identity func(*http.Request) (string, bool)
	// Issuer is the authorization server the metadata names (the
	// deployment's JWT issuer); empty names none.
	Issuer string
	// Hold is how long a call without a task, or a tasks/result, waits
	// for its turn before answering with how to follow it; 0 means
	// DefaultHold. Keep it within the front door's time.
	Hold time.Duration
	// Log receives failures; nil discards them.
	Log *slog.Logger
}

// Server makes the endpoint's handler of Path, MetadataPath and
// MetadataPath+Path: sdkserve.New is baton's.
type Server func(Config) http.Handler

// Select returns the agents spec names among all (Env's syntax): none
// for "", all for "*", else each comma-separated name, which must be one
// of all.
func Select(spec string, all []string) ([]string, error) {
	spec = strings.TrimSpace(spec)
	switch spec {
	case "":
		return nil, nil
	case "*":
		return slices.Clone(all), nil
	}
	var out []string
	for name := range strings.SplitSeq(spec, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !slices.Contains(all, name) {
			return nil, fmt.Errorf("mcpserve: %s names agent %q, which the deployment does not have (it has %s)", Env, name, strings.Join(all, ", "))
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// Routes are the method and path patterns the endpoint serves, and
// whether each answers without the caller's identity.
func Routes() map[string]bool {
	return map[string]bool{
		"POST " + Path: false, "GET " + Path: false, "DELETE " + Path: false,
		"GET " + MetadataPath: true, "GET " + MetadataPath + Path: true,
	}
}

// Base is the URL the request reached the deployment at, without a path.
func Base(r *http.Request) string {
	scheme := r.Header.Get("X-Forwarded-Proto")
	if scheme == "" {
		scheme = "http"
		if r.TLS != nil {
			scheme = "https"
		}
	}
	return scheme + "://" + r.Host
}

// Metadata serves the protected-resource metadata: the resource is Path
// at the address the request came to, and its authorization server the
// deployment's JWT issuer.
func Metadata(issuer string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if r.Method != http.MethodGet {
			WriteJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "use GET"})
			return
		}
		doc := map[string]any{"resource": Base(r) + Path, "bearer_methods_supported": []string{"header"},
			"resource_name": "baton agents"}
		if issuer != "" {
			doc["authorization_servers"] = []string{issuer}
		}
		WriteJSON(w, http.StatusOK, doc)
	}
}

// Challenge answers 401 with the WWW-Authenticate header that points to
// the metadata, as MCP's authorization spec has it.
func Challenge(w http.ResponseWriter, r *http.Request) {
	meta := Base(r) + MetadataPath + Path
	w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer resource_metadata=%q", meta))
	WriteJSON(w, http.StatusUnauthorized, map[string]string{"error": "a bearer token is required; see " + meta})
}

// Unserved is the endpoint of a program that registers no Server: the
// metadata, 401 without an identity, and 501 saying so with one.
func Unserved(c Config) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(MetadataPath, Metadata(c.Issuer))
	mux.HandleFunc(MetadataPath+Path, Metadata(c.Issuer))
	mux.HandleFunc(Path, func(w http.ResponseWriter, r *http.Request) {
		if c.Identity == nil {
			Challenge(w, r)
			return
		}
		if id, ok := c.Identity(r); !ok || id == "" {
			Challenge(w, r)
			return
		}
		WriteJSON(w, http.StatusNotImplemented, map[string]string{"error": "this program serves no MCP endpoint (host.Config.MCPServer)"})
	})
	return mux
}

// WriteJSON writes v as the answer, with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		data = []byte(`{"error":"encode the answer"}`)
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}
