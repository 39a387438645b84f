package testdev

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/baton-run/baton/internal/devserver"
)

// M is the part of *testing.M the package uses.
type M interface{ Run() int }

// Run starts the dev server on a free port with the SAM template tmpl,
// sets *base to its URL, runs the tests and stops the server, for a
// TestMain: os.Exit(testdev.Run(m, baton.Template(), &base)). It returns 1
// if the server does not start or does not stop cleanly.
func Run(m M, tmpl []byte, base *string) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- devserver.Run(ctx, devserver.Options{Addr: "127.0.0.1:0", Tick: time.Second, Template: tmpl,
			Ready: func(u string) { ready <- u }}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	select {
	case *base = <-ready:
	case err := <-done:
		fmt.Fprintln(os.Stderr, "testdev: dev server stopped:", err)
		return 1
	case <-time.After(time.Minute):
		fmt.Fprintln(os.Stderr, "testdev: dev server never became ready")
		return 1
	}
	code := m.Run()
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "testdev: dev server:", err)
		code = 1
	}
	return code
}
