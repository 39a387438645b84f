package cli_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	batonlib "github.com/baton-run/baton"
	"github.com/baton-run/baton/pkg/devserver"
)

// devAPI is the base URL of the dev server every test talks to: the
// in-process emulator, the demo agent, the operator API, the resume worker
// and the tick, as `baton dev` runs them.
var devAPI string

func TestMain(m *testing.M) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- devserver.Run(ctx, devserver.Options{Addr: "127.0.0.1:0", Tick: time.Second, Template: batonlib.Template(),
			Ready: func(u string) { ready <- u }}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	select {
	case devAPI = <-ready:
	case err := <-done:
		fmt.Fprintf(os.Stderr, "dev server stopped: %v\n", err)
		os.Exit(1)
	case <-time.After(60 * time.Second):
		fmt.Fprintln(os.Stderr, "dev server never became ready")
		os.Exit(1)
	}
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintf(os.Stderr, "dev server: %v\n", err)
		code = 1
	}
	os.Exit(code)
}
