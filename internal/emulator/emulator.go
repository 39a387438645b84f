package emulator

import (
	"os"
	"strings"

	"github.com/sivchari/kumo"

	"github.com/baton-run/baton/internal/awsenv"
)

// Emulator is a running AWS endpoint and clients pointed at it.
type Emulator struct {
	URL     string
	Clients *awsenv.Clients
	// External reports whether the endpoint came from AWS_ENDPOINT_URL.
	External bool
	// DataDir is where an in-process kumo keeps its data (KUMO_DATA_DIR);
	// empty means in memory.
	DataDir string
	srv     *kumo.Server
}

// Start returns the endpoint named by AWS_ENDPOINT_URL when set, otherwise an
// in-process kumo server on 127.0.0.1. kumo keeps its data in memory unless
// KUMO_DATA_DIR was set when the process started.
func Start() *Emulator {
	if url := os.Getenv("AWS_ENDPOINT_URL"); url != "" {
		return &Emulator{URL: url, Clients: awsenv.ForEndpoint(url), External: true}
	}
	srv := kumo.NewServer()
	// kumo listens on 127.0.0.1; the SDK must not resolve "localhost".
	url := strings.Replace(srv.URL, "localhost", "127.0.0.1", 1)
	return &Emulator{URL: url, Clients: awsenv.ForEndpoint(url), srv: srv, DataDir: os.Getenv("KUMO_DATA_DIR")}
}

// Close stops an in-process server; an external endpoint is left alone.
func (e *Emulator) Close() {
	if e.srv != nil {
		e.srv.Close()
	}
}
