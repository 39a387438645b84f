package memstore_test

import (
	"testing"

	"github.com/baton-run/baton/internal/clock"
	"github.com/baton-run/baton/internal/factlogtest"
	"github.com/baton-run/baton/internal/memstore"
	"github.com/baton-run/baton/internal/session"
)

var _ session.FactLog = (*memstore.Log)(nil)

// TestFactLogContract runs the fact-log contract on the log in memory; the
// stream-store contract runs on its bucket in pkg/streams.
func TestFactLogContract(t *testing.T) {
	t.Parallel()
	factlogtest.Run(t, func(t *testing.T, clk clock.Clock, _ bool) session.FactLog { return memstore.NewLog(clk) })
}
