package turn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/reducer"
)

// toolsRecord is a DataTools part's data.
type toolsRecord struct {
	Tools []tool.Listed `json:"tools"`
}

// offer fixes the tools this invocation offers the model: the agent's own,
// then its Remote source's as the turn's stream records them. A turn with
// no record yet lists them now and records them with its next checkpoint.
// An error wrapping tool.ErrUnavailable may pass; any other cannot.
func (ru *ledger) offer(ctx context.Context) error {
	src := ru.agent.Remote
	if src == nil {
		ru.tools = ru.agent.Tools
		return nil
	}
	rec, found := recorded(ru.parts)
	if !found {
		lctx, cancel := ru.until(ctx, ru.deadline.Add(-ru.lim.Margin))
		listed, err := src.List(lctx)
		cancel()
		if err != nil {
			return err
		}
		if listed == nil {
			listed = []tool.Listed{}
		}
		rec = parts.Part{Type: DataTools, Data: mustJSON(toolsRecord{Tools: listed})}
	}
	// The tools are made from the record's bytes, fresh or not, so every
	// invocation of the turn makes the same ones.
	var data toolsRecord
	if err := json.Unmarshal(rec.Data, &data); err != nil {
		return fmt.Errorf("the turn's record of its tools: %w", err)
	}
	var own []tool.Tool
	if ru.agent.Tools != nil {
		own = ru.agent.Tools.Tools()
	}
	reg, err := tool.NewRegistry(append(own, src.Tools(data.Tools)...)...)
	if err != nil {
		return fmt.Errorf("the listed tools: %w", err)
	}
	ru.tools = reg
	if !found {
		ru.emit(rec)
	}
	return nil
}

// recorded finds the turn's record of its listed tools: the last
// DataTools part.
func recorded(ps []parts.Part) (parts.Part, bool) {
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].Type == DataTools {
			return ps[i], true
		}
	}
	return parts.Part{}, false
}

// unoffered ends an invocation whose tools could not be fixed: a source
// that may come back suspends the turn as for a model fault, with a
// delayed wake; anything else fails it.
func (ru *ledger) unoffered(ctx context.Context, err error) (Outcome, error) {
	if ctx.Err() != nil {
		return ru.out, fmt.Errorf("turn %s: %w", ru.out.Turn, ctx.Err())
	}
	if errors.Is(err, tool.ErrUnavailable) {
		return ru.end.suspendFor(ctx, reducer.CauseToolsUnavailable, 0, reducer.FailTool,
			"the agent's remote tools stayed unavailable", err)
	}
	return ru.end.fail(ctx, reducer.FailTool, fmt.Errorf("the agent's remote tools cannot be offered: %w", err))
}
