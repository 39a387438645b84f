package dynamo_test

import (
	"testing"

	"github.com/baton-run/baton/internal/clock"
	"github.com/baton-run/baton/internal/dynamo"
	"github.com/baton-run/baton/internal/factlogtest"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/internal/testenv"
)

// TestFactLogContract runs the fact-log contract on DynamoDB (kumo): the
// shared table, or a table of the case's own.
func TestFactLogContract(t *testing.T) {
	t.Parallel()
	factlogtest.Run(t, func(t *testing.T, clk clock.Clock, own bool) session.FactLog {
		table := dynamo.TestEnv.Table
		if own {
			table = testenv.New(t).Table
		}
		return dynamo.New(dynamo.TestEnv.Emu.Clients.DynamoDB, table, dynamo.WithClock(clk))
	})
}
