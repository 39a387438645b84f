package turn

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/pkg/streams"
)

// ProgressFlush is how often the data parts running tools emit are
// written, when the agent sets no LiveFlush: at most one chunk per
// interval, whatever the number of parts. A step whose tools emit nothing
// writes nothing more.
const ProgressFlush = 250 * time.Millisecond

// progress carries the data parts the tools of one settle emit to the
// stream, on the live flush: the parts are appended to the sink as they
// come (it is safe for concurrent use, and reads run concurrently), and a
// Live flusher writes them at most once per interval.
type progress struct {
	ctx   context.Context
	sink  *streams.Sink
	every time.Duration

	mu   sync.Mutex
	live *streams.Live // started by the first part
}

// newProgress returns the progress of a settle running in ctx.
func (ru *ledger) newProgress(ctx context.Context) *progress {
	every := ru.lim.LiveFlush
	if every <= 0 {
		every = ProgressFlush
	}
	return &progress{ctx: ctx, sink: ru.sink, every: every}
}

// emitter returns the emitter of call id's tool: its parts name the call.
func (pr *progress) emitter(id string) tool.Emitter {
	return func(d tool.Data, payload json.RawMessage) error {
		p := parts.Part{Type: parts.Type("data-" + d.Type), ID: d.ID, ToolCallID: id, Data: payload, Transient: d.Transient}
		if err := pr.sink.Append(p); err != nil {
			return err
		}
		pr.mu.Lock()
		defer pr.mu.Unlock()
		if pr.live == nil {
			pr.live = pr.sink.Live(pr.every)
		}
		// A failed flush leaves the parts buffered for the next one, and
		// the ledger's own flush reports a broken stream: the tool goes on.
		_ = pr.live.Poke(pr.ctx)
		return nil
	}
}

// stop ends the live flushing; parts not yet written stay buffered for
// the ledger's next flush.
func (pr *progress) stop() {
	pr.mu.Lock()
	live := pr.live
	pr.mu.Unlock()
	if live != nil {
		_ = live.Stop() // as in emitter: the next flush reports a broken stream
	}
}

// redone is the data-redone part for the calls of prior, the stream so
// far, that emitted data parts and have no result: the invocation that
// ran them ended while they ran. It reports false when there are none.
func redone(prior []parts.Part) (parts.Part, bool) {
	var emitted []string // the calls that emitted, in order
	settled := map[string]bool{}
	for _, p := range prior {
		switch {
		case p.Type == parts.ToolOutputAvailable || p.Type == parts.ToolOutputError || p.Type == parts.ToolOutputDenied:
			settled[p.ToolCallID] = true
		case p.Type == DataCallback:
			settled[p.ID] = true // it returned, pending on its callback: what it emitted stands
		case p.ToolData() && !slices.Contains(emitted, p.ToolCallID):
			emitted = append(emitted, p.ToolCallID)
		}
	}
	ids := slices.DeleteFunc(emitted, func(id string) bool { return settled[id] })
	if len(ids) == 0 {
		return parts.Part{}, false
	}
	b, _ := json.Marshal(struct {
		ToolCallIDs []string `json:"toolCallIds"`
		Reason      string   `json:"reason"`
	}{ids, "the invocation ended while these calls ran; what they emitted may not stand, and a call run again emits anew"})
	return parts.Part{Type: parts.DataRedone, Data: b}, true
}
