package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// consoleLog collects what the page writes to its DevTools console: calls
// of the console API, uncaught exceptions and browser log entries (where
// Chromium reports a Content Security Policy violation).
type consoleLog struct {
	mu   sync.Mutex
	msgs []chromedp.ConsoleMessage
}

func listenConsole(b *browser) *consoleLog {
	l := &consoleLog{}
	msgs := chromedp.Console(b.ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			l.mu.Lock()
			l.msgs = append(l.msgs, m)
			l.mu.Unlock()
		}
	}()
	return l
}

// problems returns the CSP violations and uncaught exceptions seen.
func (l *consoleLog) problems() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, m := range l.msgs {
		if m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
			out = append(out, m.String())
		}
	}
	return out
}

// jsUnlabelled lists the form controls on the page with no accessible
// label: no <label> and no aria-label.
const jsUnlabelled = `[...document.querySelectorAll('input, select, textarea')]
	.filter(e => e.type !== 'hidden' && !e.labels?.length && !e.getAttribute('aria-label'))
	.map(e => e.id || e.outerHTML).join(', ')`

// within runs fn as subtest name, with the browser failing that subtest
// and waiting at most 30 s, so that each check fails on its own.
func within(t *testing.T, b *browser, name string, fn func(b *browser)) {
	t.Run(name, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
		defer cancel()
		fn(&browser{t: t, ctx: ctx, dir: b.dir})
	})
}

// TestConsoleHistoryAndAccess drives the console in Chromium through a
// session of two turns, each suspended for an approval: each turn is
// viewable from the turn list, every fact and stream part shows its JSON,
// the steps show as a waterfall of model, tool and suspended time (from the
// steps' message-metadata and the facts); the sessions list filters by
// status, agent and text and reads only the listing (no request per row);
// every control is labelled, the status and the turn announce themselves
// (aria-live), the skip link moves focus to the content, and the page's
// console has no CSP violation or exception.
func TestConsoleHistoryAndAccess(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := newBrowser(t, ctx)
	console := listenConsole(b)
	s := newStack(t, ctx, "http://127.0.0.1:1", func(*http.Request) (string, bool) { return "local", true })

	quickID := s.session(ctx, "quick", "Weather?")
	notesID := s.session(ctx, "notes", "Note this")
	waiterID := s.session(ctx, "waiter", "Wait")

	// Two turns, each approved from the page.
	b.open(s.url + "/console/#/s/" + quickID)
	var unlabelled []string
	approve := func(turns int) {
		b.waitFor(fmt.Sprintf("turn %d's approval card", turns), `document.querySelector('#approvals .approval button.approve') && document.querySelector('#cancel-reason')`)
		if got := eval[string](b, jsUnlabelled); got != "" {
			unlabelled = append(unlabelled, got)
		}
		b.run("approve", chromedp.Click(chromedp.CSS(`#approvals .approval button.approve`)))
		b.waitFor("the turn to finish", jsFinished)
		b.waitFor("the idle status", `(`+jsStatus+`) === 'idle'`)
		b.waitFor(fmt.Sprintf("%d turns completed", turns), fmt.Sprintf(`document.querySelectorAll('#timeline li[data-type="turn.completed"]').length === %d`, turns))
	}
	approve(1)
	s.post(ctx, quickID, "Again")
	b.waitFor("the second turn", `document.querySelectorAll('#timeline li[data-type="turn.started"]').length === 2`)
	approve(2)

	within(t, b, "labels and aria-live on the session page", func(b *browser) {
		if len(unlabelled) > 0 {
			b.fail("unlabelled controls on the session page: %s", strings.Join(unlabelled, "; "))
		}
		if live := eval[string](b, `[document.querySelector('#status').getAttribute('aria-live'), document.querySelector('#turn').getAttribute('aria-live')].join()`); live != "polite,polite" {
			b.fail("aria-live of #status and #turn = %q, want polite,polite", live)
		}
		// The status changed (suspended, then idle): it was announced.
		if got := eval[string](b, `document.querySelector('#announce[aria-live=polite]')?.textContent || ''`); !strings.HasPrefix(got, "Session ") {
			b.fail("the polite live region says %q, want the status change", got)
		}
	})

	within(t, b, "turn history", func(b *browser) {
		b.waitFor("two turns listed", `document.querySelectorAll('#turns button[data-turn]').length === 2`)
		first := eval[string](b, `document.querySelector('#turns button[data-turn]').dataset.turn`)
		second := eval[string](b, `document.querySelectorAll('#turns button[data-turn]')[1].dataset.turn`)
		if first == second || first == "" {
			b.fail("the turn list names %q and %q, want two turns", first, second)
		}
		b.run("view turn 1", chromedp.Click(chromedp.CSS(`#turns button[data-turn]`)))
		b.waitFor("turn 1 on screen", jsHasText(`.split .row.muted`, first))
		b.waitFor("turn 1's stream", jsFinished+` && `+jsHasText(`#turn .text`, "Sent."))
		if cur := eval[string](b, `[...document.querySelectorAll('#turns button')].map(b => b.getAttribute('aria-current')).join()`); cur != "true,false" {
			b.fail("aria-current of the turn buttons = %q, want turn 1 current", cur)
		}
		// It stays on screen across the page's refreshes.
		eval[bool](b, `(document.querySelector('#usage').dataset.mark = 'old', true)`) // a refresh redraws #usage
		b.waitFor("a refresh", `!document.querySelector('#usage')?.dataset.mark`)
		if got := eval[string](b, `document.querySelector('.split .row.muted').textContent`); got != first {
			b.fail("the turn shown after a refresh is %q, want turn 1 (%s)", got, first)
		}
	})

	within(t, b, "fact JSON", func(b *browser) {
		type factView struct{ Items, Raw int }
		fv := eval[factView](b, `({Items: document.querySelectorAll('#timeline li').length, Raw: document.querySelectorAll('#timeline li > details.raw > pre').length})`)
		if fv.Items == 0 || fv.Raw != fv.Items {
			b.fail("%d timeline entries, %d with their JSON; want all", fv.Items, fv.Raw)
		}
		var started map[string]any
		raw := eval[string](b, `document.querySelector('#timeline li[data-type="turn.started"] details.raw pre')?.textContent || ''`)
		if err := json.Unmarshal([]byte(raw), &started); err != nil || started["type"] != "turn.started" || started["seq"] == nil {
			b.fail("turn.started's JSON = %q (%v), want the fact", raw, err)
		}
	})

	within(t, b, "part JSON", func(b *browser) {
		b.run("open the parts", chromedp.Click(chromedp.CSS(`#parts summary`)))
		b.waitFor("the parts' JSON", `document.querySelectorAll('#parts pre.part').length > 0`)
		var ps []map[string]any
		if err := json.Unmarshal([]byte(eval[string](b, `'[' + [...document.querySelectorAll('#parts pre.part')].map(p => p.textContent).join(',') + ']'`)), &ps); err != nil {
			b.fail("the parts' JSON does not parse: %v", err)
		}
		timed := 0
		for _, p := range ps {
			if m, ok := p["messageMetadata"].(map[string]any); ok && m["startedAt"] != nil && m["finishedAt"] != nil {
				timed++
			}
		}
		if ps[0]["type"] != "start" || ps[len(ps)-1]["type"] != "finish" || timed != 3 {
			b.fail("parts: %v … %v, %d steps timed in their message-metadata; want start … finish, and 3", ps[0]["type"], ps[len(ps)-1]["type"], timed)
		}
	})

	within(t, b, "waterfall", func(b *browser) {
		type row struct {
			Model, Tools, Checkpoint, Suspended int
			Text                                string
		}
		rows := eval[[]row](b, `[...document.querySelectorAll('#waterfall .wf-row')].map(r => ({
			Model: r.querySelectorAll('.bar.model').length, Tools: r.querySelectorAll('.bar.tools').length,
			Checkpoint: r.querySelectorAll('.bar.checkpoint').length,
			Suspended: r.querySelectorAll('.bar.suspended').length, Text: r.lastElementChild.textContent}))`)
		// Each bar as kind:ms@left, for a failure to show what was drawn.
		bars := eval[string](b, `[...document.querySelectorAll('#waterfall .wf-row')].map((r, i) => 'step ' + (i + 1) + ': ' +
			[...r.querySelectorAll('.bar')].map(x => x.className.replace('bar ', '') + ':' + x.dataset.ms + '@' + x.style.left).join(' ')).join('; ')`)
		b.t.Logf("waterfall bars: %s", bars)
		if len(rows) != 3 {
			b.fail("the waterfall has %d steps, want 3: %+v", len(rows), rows)
		}
		for i, r := range rows {
			if r.Model != 1 || !regexp.MustCompile(`^model \d`).MatchString(r.Text) {
				b.fail("waterfall step %d = %+v, want one model bar with its time", i+1, r)
			}
		}
		// The last step ends the turn: what follows it is only the final
		// checkpoint, which may take under a millisecond.
		if rows[0].Tools != 1 || rows[0].Suspended != 0 || rows[1].Suspended != 1 || rows[2].Suspended != 0 {
			b.fail("waterfall = %+v, want the weather tool's time after step 1 and the approval's suspension after step 2", rows)
		}
		// Each step's model time, tool time and checkpoint are segments of
		// their own: the first step's three (a read tool, then the write of
		// the step and its result), the approved tool's step likewise, and
		// the last step's checkpoint, the turn's ending.
		for i, want := range []row{{Model: 1, Tools: 1, Checkpoint: 1}, {Model: 1, Tools: 1, Checkpoint: 1}, {Model: 1, Checkpoint: 1}} {
			if r := rows[i]; r.Model != want.Model || r.Tools != want.Tools || r.Checkpoint != want.Checkpoint {
				b.fail("waterfall step %d = %+v, want %d model, %d tools and %d checkpoint segments", i+1, r, want.Model, want.Tools, want.Checkpoint)
			}
			if !strings.Contains(rows[i].Text, "checkpoint ") {
				b.fail("waterfall step %d says %q, want its checkpoint time", i+1, rows[i].Text)
			}
		}
		b.shot("10-turn-history-waterfall")
	})

	b.open(s.url + "/console/")
	within(t, b, "the list reads only the listing", func(b *browser) {
		before := len(s.served())
		b.open(s.url + "/console/")
		b.waitFor("the three sessions with their usage", `document.querySelectorAll('#sessions tr[data-id]').length === 3 &&
			[...document.querySelectorAll('#sessions td.usage')].some(e => e.textContent.includes('steps'))`)
		// Wait for the list's refresh, so a per-row request would have come.
		lists := func() int {
			n := 0
			for _, r := range s.served()[before:] {
				if r == "GET /sessions" {
					n++
				}
			}
			return n
		}
		for lists() < 2 {
			select {
			case <-b.ctx.Done():
				b.fail("the list never refreshed")
			case <-time.After(100 * time.Millisecond):
			}
		}
		for _, r := range s.served()[before:] {
			if strings.HasPrefix(r, "GET /sessions/") {
				b.fail("the list asked %s: it should need only the listing", r)
			}
		}
	})

	within(t, b, "search and filter", func(b *browser) {
		b.waitFor("the filters", `document.querySelector('#filter-agent') && document.querySelectorAll('#sessions tr[data-id]').length === 3`)
		ids := func() string {
			return eval[string](b, `[...document.querySelectorAll('#sessions tr[data-id]')].map(r => r.dataset.id).sort().join()`)
		}
		pick := func(sel, v string) {
			eval[bool](b, fmt.Sprintf(`(() => { const s = document.querySelector(%s); s.value = %s; s.dispatchEvent(new Event('change')); return true; })()`, jsString(sel), jsString(v)))
		}
		pick("#filter-agent", "notes")
		if got := ids(); got != notesID {
			b.fail("filtered to agent notes: %s, want %s", got, notesID)
		}
		pick("#filter-agent", "")
		b.waitFor("the waiter's suspension listed", fmt.Sprintf(`document.querySelector('#sessions tr[data-id=%s]')?.dataset.status === 'suspended'`, jsString(waiterID)))
		pick("#filter-status", "suspended")
		if got := ids(); got != waiterID {
			b.fail("filtered to status suspended: %s, want %s", got, waiterID)
		}
		pick("#filter-status", "")
		b.run("search", chromedp.SendKeys(chromedp.CSS(`#filter-text`), "quic"))
		if got := ids(); got != quickID {
			b.fail("searched for quic: %s, want %s", got, quickID)
		}
		b.waitFor("the count of matches", jsHasText(`#filter-count`, "1 of 3 sessions"))
		b.shot("11-sessions-filtered")
	})

	within(t, b, "labels on the list", func(b *browser) {
		if got := eval[string](b, jsUnlabelled); got != "" {
			b.fail("unlabelled controls on the list: %s", got)
		}
	})

	within(t, b, "skip link", func(b *browser) {
		b.open(s.url + "/console/")
		b.waitFor("the list", `document.querySelector('#sessions tr[data-id]')`)
		b.run("tab", chromedp.KeyEvent("\t"))
		if got := eval[string](b, `document.activeElement.id`); got != "skip" {
			b.fail("the first focus is %q, want the skip link", got)
		}
		b.run("skip", chromedp.KeyEvent("\r"))
		if got := eval[string](b, `document.activeElement.id + ' ' + location.hash`); got != "main " {
			b.fail("after the skip link: focus and hash %q, want main and no route change", got)
		}
	})

	t.Run("no CSP violation in the console", func(t *testing.T) {
		if p := console.problems(); len(p) > 0 {
			t.Fatalf("the page's console has CSP violations or exceptions:\n%s", strings.Join(p, "\n"))
		}
	})
}

// TestWaterfallSegments feeds the page's waterfall the step metadata and
// facts of a turn whose second step was followed by a suspension, and
// checks each step's bars: its model time, then its tools and checkpoint
// up to the next step (or the turn's end), less the time suspended.
func TestWaterfallSegments(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := newBrowser(t, ctx)
	srv := httptest.NewServer(noIdentity())
	defer srv.Close()
	b.open(srv.URL + "/console/")
	b.waitFor("the page", `document.querySelector('#signin')`)
	// Times in ms from 1000: step 1 is 1000-1400, its tool runs to 1500;
	// step 2 is 1500-1700, it suspends at 1800 and resumes at 5800;
	// step 3 is 6000-6300 and the turn ends at 6350. Another turn's fact
	// is ignored.
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`import('./waterfall.js').then(({ segments }) => {
		const iso = ms => new Date(ms).toISOString();
		const facts = [
			{type: 'turn.started', turn: 't1', time: iso(900)},
			{type: 'turn.suspended', turn: 't1', time: iso(1800)},
			{type: 'turn.suspended', turn: 't0', time: iso(2000)},
			{type: 'turn.resumed', turn: 't1', time: iso(5800)},
			{type: 'turn.completed', turn: 't1', time: iso(6350)},
		];
		const steps = [{startedAt: 1000, finishedAt: 1400}, {startedAt: 1500, finishedAt: 1700}, {usage: {}}, {startedAt: 6000, finishedAt: 6300}];
		return JSON.stringify(segments(steps, facts, 't1').map(bars => bars.map(b => b.kind + ':' + b.from + '-' + b.to).join(' ')));
	})`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	want := `["model:1000-1400 gap:1400-1500","model:1500-1700 gap:1700-1800 suspended:1800-5800 gap:5800-6000","model:6000-6300 gap:6300-6350"]`
	if got != want {
		t.Fatalf("segments of steps without tool and checkpoint times\n got %s\nwant %s", got, want)
	}

	// The same turn as the runner now writes it: each step's metadata says
	// when the tools since the step before ran and when the checkpoint
	// before it began. Step 1's tool runs 1410-1480 and the checkpoint
	// 1490-1500; step 2's approved tool runs after the resume, 5810-5900,
	// and the checkpoint 5950-6000; a tool under a millisecond and the
	// last step's ending still show.
	got, err = chromedp.Run(b.ctx, chromedp.Evaluate[string](`import('./waterfall.js').then(({ segments }) => {
		const iso = ms => new Date(ms).toISOString();
		const facts = [
			{type: 'turn.started', turn: 't1', time: iso(900)},
			{type: 'turn.suspended', turn: 't1', time: iso(1800)},
			{type: 'turn.resumed', turn: 't1', time: iso(5800)},
			{type: 'turn.completed', turn: 't1', time: iso(6350)},
		];
		const steps = [
			{startedAt: 1000, finishedAt: 1400, checkpointAt: 990},
			{startedAt: 1500, finishedAt: 1700, toolsStartedAt: 1410, toolsFinishedAt: 1480, checkpointAt: 1490},
			{startedAt: 6000, finishedAt: 6300, toolsStartedAt: 5810, toolsFinishedAt: 5810, checkpointAt: 5950},
		];
		return JSON.stringify(segments(steps, facts, 't1').map(bars => bars.map(b => b.kind + ':' + b.from + '-' + b.to).join(' ')));
	})`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	want = `["model:1000-1400 other:1400-1410 tools:1410-1480 other:1480-1490 checkpoint:1490-1500",` +
		`"model:1500-1700 other:1700-1800 suspended:1800-5800 other:5800-5810 tools:5810-5810 other:5810-5950 checkpoint:5950-6000",` +
		`"model:6000-6300 checkpoint:6300-6350"]`
	if got != want {
		t.Fatalf("segments of steps with tool and checkpoint times\n got %s\nwant %s", got, want)
	}
}
