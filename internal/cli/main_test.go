package cli_test

import (
	"os"
	"testing"

	batonlib "github.com/baton-run/baton"
	"github.com/baton-run/baton/internal/testdev"
)

// devAPI is the base URL of the dev server every test talks to: the
// in-process emulator, the demo agent, the operator API, the resume worker
// and the tick, as `baton dev` runs them.
var devAPI string

func TestMain(m *testing.M) { os.Exit(testdev.Run(m, batonlib.Template(), &devAPI)) }
