package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/emulator"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/provision"
)

// TB is the part of testing.TB the package uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Env is one fresh set of resources on an emulator.
type Env struct {
	// Emu is the emulator the resources live on; its clients are not
	// counted and not faulted.
	Emu *emulator.Emulator
	provision.Resources
}

// URL is the emulator's endpoint.
func (e Env) URL() string { return e.Emu.URL }

// Clients are the emulator's clients.
func (e Env) Clients() *awsenv.Clients { return e.Emu.Clients }

// shared is the test binary's emulator, started on first use. It runs until
// the process exits.
var shared = sync.OnceValue(emulator.Start)

// Emulator returns the emulator the test binary shares (see emulator.Start:
// AWS_ENDPOINT_URL when set).
func Emulator() *emulator.Emulator { return shared() }

// New provisions fresh resources from the repository's template.yaml on
// the shared emulator, failing tb on an error. kumo's state is process-wide:
// a test that sweeps a whole table or reads a whole queue takes its own.
func New(tb TB) Env {
	tb.Helper()
	e, err := Provision(context.Background(), Emulator(), nil)
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	return e
}

// Provision creates a table, bucket, queue and dead-letter queue of fresh
// names on emu, from tmpl, or from the repository's template.yaml when tmpl
// is nil.
func Provision(ctx context.Context, emu *emulator.Emulator, tmpl []byte) (Env, error) {
	if tmpl == nil {
		var err error
		if tmpl, err = Template(); err != nil {
			return Env{}, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := provision.Provision(ctx, emu.Clients, tmpl, FreshNames())
	if err != nil {
		return Env{}, fmt.Errorf("testenv: %w", err)
	}
	return Env{Emu: emu, Resources: res}, nil
}

// FreshNames are resource names no other test uses; they suit a table, a
// bucket and a queue alike.
func FreshNames() provision.Names {
	n := strings.ReplaceAll(ids.New("t"), "_", "-")
	return provision.Names{Table: n, Bucket: n, Queue: n}
}

// Template reads template.yaml from the module root, the nearest directory
// above the working directory (a test's package) that holds go.mod. The
// root package embeds the same file as baton.Template, but packages below it
// cannot import the root.
func Template() ([]byte, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			b, err := os.ReadFile(filepath.Join(dir, "template.yaml"))
			if err != nil {
				return nil, fmt.Errorf("testenv: %w", err)
			}
			return b, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return nil, errors.New("testenv: no go.mod above the working directory")
		}
		dir = up
	}
}

// M is the part of *testing.M the package uses.
type M interface{ Run() int }

// Run provisions fresh resources on the shared emulator into *e and runs
// the tests, for a TestMain: os.Exit(testenv.Run(m, &env)). It returns 1
// without running them if provisioning fails.
func Run(m M, e *Env) int {
	env, err := Provision(context.Background(), Emulator(), nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*e = env
	return m.Run()
}
