package claimsdb

import (
	"os"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
)

// testEnv is the emulator and the table shared by the package's tests;
// kumo keeps state per process, so tests use unique namespaces and owners.
var testEnv testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &testEnv)) }

var t0 = time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
