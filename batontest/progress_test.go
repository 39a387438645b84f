package batontest_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/internal/parts"
)

// scanDesk is a kit whose model calls scan once, then ends.
func scanDesk(t *testing.T, scan baton.Tool) (*batontest.Kit, *batontest.Recorder) {
	t.Helper()
	rec := batontest.Record(batontest.Script(t, `{"steps":[
	 {"text":"Scanning.","toolCalls":[{"name":"scan","input":{"dir":"/srv"}}]},
	 {"text":"Scanned."}]}`))
	return batontest.New(t, host.Config{Agents: []baton.Agent{{Name: "desk", Model: rec, Tools: []baton.Tool{scan}}}}), rec
}

type dirIn struct {
	Dir string `json:"dir"`
}

// dataParts returns the session's parts of type typ.
func dataParts(s *batontest.Session, typ parts.Type) []batontest.Part {
	var out []batontest.Part
	for _, p := range s.Parts() {
		if p.Type == typ {
			out = append(out, p)
		}
	}
	return out
}

// TestToolProgressReachesTheStreamNotTheModel: a tool's Emit puts data
// parts in the turn's stream, naming its call, while it runs; bad parts
// and an Emit outside a call are refused; the model's next request holds
// none of them.
func TestToolProgressReachesTheStreamNotTheModel(t *testing.T) {
	t.Parallel()
	var outside, badType, reserved, tooBig error
	outside = baton.Emit(context.Background(), baton.Data{Type: "progress"})
	scan := baton.Func("scan", "Scan a directory.", func(ctx context.Context, in dirIn) (string, error) {
		badType = baton.Emit(ctx, baton.Data{Type: "Progress!"})
		reserved = baton.Emit(ctx, baton.Data{Type: "abandoned", Data: 1})
		tooBig = baton.Emit(ctx, baton.Data{Type: "progress", Data: strings.Repeat("x", baton.MaxData)})
		for i := 1; i <= 3; i++ {
			if err := baton.Emit(ctx, baton.Data{Type: "progress", ID: "scan", Data: map[string]int{"done": i, "of": 3}}); err != nil {
				return "", err
			}
		}
		if err := baton.Emit(ctx, baton.Data{Type: "file-found", Data: map[string]string{"path": in.Dir + "/secret.txt"}, Transient: true}); err != nil {
			return "", err
		}
		return "3 files", nil
	})
	kit, rec := scanDesk(t, scan)
	s := kit.Session("desk")
	s.Post("Scan /srv.")
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("run: %+v", out)
	}
	if !errors.Is(outside, baton.ErrNoStream) {
		t.Errorf("Emit outside a call: %v, want ErrNoStream", outside)
	}
	for name, err := range map[string]error{"a bad type": badType, "a reserved type": reserved, "a payload over MaxData": tooBig} {
		if !errors.Is(err, baton.ErrBadData) {
			t.Errorf("Emit of %s: %v, want ErrBadData", name, err)
		}
	}
	call := s.Call("scan")
	progress := dataParts(s, "data-progress")
	if len(progress) != 3 {
		t.Fatalf("%d data-progress parts, want 3: %+v", len(progress), progress)
	}
	for i, p := range progress {
		want := map[string]int{"done": i + 1, "of": 3}
		var got map[string]int
		if p.ID != "scan" || p.ToolCallID != call.ID || json.Unmarshal(p.Data, &got) != nil || got["done"] != want["done"] || got["of"] != 3 {
			t.Errorf("part %d %+v, want id scan, call %s, data %v", i, p, call.ID, want)
		}
	}
	if found := dataParts(s, "data-file-found"); len(found) != 1 || !found[0].Transient {
		t.Errorf("file-found parts %+v, want one transient", found)
	}
	// The parts came before the call's result, in the order emitted.
	var order []parts.Type
	for _, p := range s.Parts() {
		if p.ToolCallID == call.ID {
			order = append(order, p.Type)
		}
	}
	if len(order) < 5 || order[len(order)-1] != parts.ToolOutputAvailable || order[len(order)-2] != "data-file-found" {
		t.Errorf("the call's parts in order %v, want the data parts before its output", order)
	}
	for _, r := range rec.Requests() {
		b, _ := json.Marshal(r.Messages)
		if strings.Contains(string(b), "secret.txt") || strings.Contains(string(b), `"done"`) {
			t.Fatalf("a model request carries a data part: %s", b)
		}
	}
}

// TestToolProgressIsLive: a tool's first part is in the stream while the
// tool still runs, before the step's checkpoint.
func TestToolProgressIsLive(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	scan := baton.Func("scan", "Scan a directory.", func(ctx context.Context, in dirIn) (string, error) {
		if err := baton.Emit(ctx, baton.Data{Type: "progress", ID: "scan", Data: map[string]string{"at": "start"}}); err != nil {
			return "", err
		}
		select {
		case <-release:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return "done", nil
	})
	kit, _ := scanDesk(t, scan)
	s := kit.Session("desk")
	s.Post("Scan /srv.")
	done := make(chan batontest.Outcome, 1)
	go func() { done <- s.Run() }()
	deadline := time.After(30 * time.Second)
	for len(dataParts(s, "data-progress")) == 0 {
		select {
		case out := <-done:
			t.Fatalf("the run ended (%+v) before the tool's part showed", out)
		case <-deadline:
			t.Fatal("the tool's part never reached the stream while it ran")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if calls := s.ToolCalls(); len(calls) != 1 || calls[0].Output != nil {
		t.Fatalf("calls %+v while the tool runs, want one with no result", calls)
	}
	close(release)
	if out := <-done; out.Kind != batontest.Completed {
		t.Fatalf("run: %+v", out)
	}
}

// TestToolProgressOfAKilledRunIsMarked: an invocation killed while a tool
// runs leaves its parts; the resumed turn marks the call redone in a
// data-redone part before the tool runs again and emits anew.
func TestToolProgressOfAKilledRunIsMarked(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	started := make(chan struct{})
	scan := baton.Func("scan", "Scan a directory.", func(ctx context.Context, in dirIn) (string, error) {
		n := runs.Add(1)
		if err := baton.Emit(ctx, baton.Data{Type: "progress", ID: "scan", Data: map[string]int32{"run": n}}); err != nil {
			return "", err
		}
		if n == 1 {
			close(started)
			<-ctx.Done() // the process dies here
			return "", ctx.Err()
		}
		return "done", nil
	}, baton.Read())
	kit, _ := scanDesk(t, scan)
	s := kit.Session("desk")
	s.Post("Scan /srv.")
	s.RunKilled(started)
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("resume: %+v", out)
	}
	call := s.Call("scan")
	var seq []string
	for _, p := range s.Parts() {
		switch {
		case p.Type == "data-progress":
			seq = append(seq, "progress "+string(p.Data))
		case p.Type == parts.DataRedone:
			var d struct {
				ToolCallIDs []string `json:"toolCallIds"`
			}
			if json.Unmarshal(p.Data, &d) != nil || len(d.ToolCallIDs) != 1 || d.ToolCallIDs[0] != call.ID {
				t.Fatalf("data-redone %s, want it to name %s", p.Data, call.ID)
			}
			seq = append(seq, "redone")
		case p.Type == parts.ToolOutputAvailable:
			seq = append(seq, "output")
		}
	}
	want := []string{`progress {"run":1}`, "redone", `progress {"run":2}`, "output"}
	if strings.Join(seq, " | ") != strings.Join(want, " | ") {
		t.Fatalf("parts %q, want %q", seq, want)
	}
}
