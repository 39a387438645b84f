package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/operator"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/internal/tick"
	"github.com/baton-run/baton/internal/tool"
	"github.com/baton-run/baton/internal/worker"
	"github.com/baton-run/baton/pkg/reducer"
)

const chromium = "/usr/bin/chromium"

// agentsJSON is the stack's agents: live streams slowly (half of each
// step's text, a pause, the other half; the runner flushes a step's first
// event at once and later ones as the next event comes after liveFlush) and
// asks approval to email; brisk is live with short pauses, for the
// sessions that need no time to watch the text grow; ledger
// charges a card through an HTTP tool that is not idempotent; builds
// starts two builds through an HTTP tool (on the same URL) that completes
// by callback.
const agentsJSON = `{"agents": {
  "live": {
    "provider": "scripted",
    "script": {"steps": [
      {"delay": "1500ms", "text": "Let me look up the weather in Lisbon before I write anything to the team.", "toolCalls": [{"name": "get_weather", "input": {"city": "Lisbon"}}]},
      {"delay": "1500ms", "reasoning": "Lisbon is clear. Porto too, for the northern office?", "text": "Lisbon is clear. Let me check Porto as well.", "toolCalls": [{"name": "get_weather", "input": {"city": "Porto"}}]},
      {"delay": "1500ms", "text": "Both are clear. I will email the team; an operator has to approve that.", "toolCalls": [{"name": "send_email", "input": {"to": "team@example.com", "subject": "Weather status", "body": "Clear skies in Lisbon and Porto today."}}]},
      {"delay": "500ms", "text": "Done: the weather in Lisbon is clear."}
    ]},
    "tools": ["get_weather", "send_email"],
    "limits": {"budget": "60s", "margin": "5s", "liveFlush": "100ms"}
  },
  "brisk": {
    "provider": "scripted",
    "script": {"steps": [
      {"delay": "100ms", "text": "Let me look up the weather in Lisbon before I write anything to the team.", "toolCalls": [{"name": "get_weather", "input": {"city": "Lisbon"}}]},
      {"delay": "100ms", "reasoning": "Lisbon is clear. Porto too, for the northern office?", "text": "Lisbon is clear. Let me check Porto as well.", "toolCalls": [{"name": "get_weather", "input": {"city": "Porto"}}]},
      {"delay": "100ms", "text": "Both are clear. I will email the team; an operator has to approve that.", "toolCalls": [{"name": "send_email", "input": {"to": "team@example.com", "subject": "Weather status", "body": "Clear skies in Lisbon and Porto today."}}]},
      {"delay": "100ms", "text": "Done: the weather in Lisbon is clear."}
    ]},
    "tools": ["get_weather", "send_email"],
    "limits": {"budget": "60s", "margin": "5s", "liveFlush": "100ms"}
  },
  "ledger": {
    "provider": "scripted",
    "script": {"steps": [
      {"text": "Charging the card.", "toolCalls": [{"name": "charge", "input": {"amount": 5}}]},
      {"text": "The card is charged."}
    ]},
    "tools": [{"name": "charge", "kind": "http", "description": "Charge a card.", "effect": "external",
      "schema": {"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]},
      "url": "CHARGE_URL", "timeout": "30s"}],
    "limits": {"budget": "3s", "margin": "500ms", "leaseGrace": "100ms"}
  },
  "builds": {
    "provider": "scripted",
    "script": {"steps": [
      {"text": "Starting two builds.", "toolCalls": [{"name": "start_build", "input": {"ref": "main"}}, {"name": "start_build", "input": {"ref": "dev"}}]},
      {"text": "Both builds are reported."}
    ]},
    "tools": [{"name": "start_build", "kind": "http", "description": "Start a CI build; its result comes by callback.", "effect": "external",
      "schema": {"type": "object", "properties": {"ref": {"type": "string"}}, "required": ["ref"]},
      "url": "CHARGE_URL", "timeout": "5s", "callback": {"timeout": "1h", "heartbeat": "30m"}}]
  },
  "limited": {
    "provider": "scripted",
    "script": {"steps": [
      {"text": "Checking Lisbon.", "toolCalls": [{"name": "get_weather", "input": {"city": "Lisbon"}}]},
      {"text": "Lisbon is clear."}
    ]},
    "tools": ["get_weather"],
    "pricing": {"inputPerMTok": 3, "outputPerMTok": 15},
    "limits": {"spend": {"turn": {"cost": 0.000001}}}
  },
  "waiter": {
    "provider": "scripted",
    "script": {"steps": [
      {"text": "Waiting until the new year.", "toolCalls": [{"name": "wait_until", "input": {"until": "2099-01-01T00:00:00Z"}}]},
      {"text": "Awake again."}
    ]},
    "tools": ["wait_until"]
  },
  "steerable": {
    "provider": "scripted",
    "steering": "steer",
    "script": {"steps": [
      {"delay": "3s", "text": "Checking Lisbon first.", "toolCalls": [{"name": "get_weather", "input": {"city": "Lisbon"}}]},
      {"text": "Lisbon is clear."}
    ]},
    "tools": ["get_weather"],
    "limits": {"liveFlush": "100ms"}
  },
  "quick": {
    "provider": "scripted",
    "script": {"steps": [
      {"text": "Checking Lisbon.", "toolCalls": [{"name": "get_weather", "input": {"city": "Lisbon"}}]},
      {"text": "Emailing the team.", "toolCalls": [{"name": "send_email", "input": {"to": "team@example.com", "subject": "Weather", "body": "Clear."}}]},
      {"text": "Sent."}
    ]},
    "tools": ["get_weather", "send_email"]
  },
  "boss": {
    "provider": "scripted",
    "script": {"steps": [
      {"text": "Asking the helper.", "toolCalls": [{"name": "helper", "input": {"task": "Say hello."}}]},
      {"text": "The helper said hello."}
    ]},
    "agents": ["helper"]
  },
  "helper": {
    "provider": "scripted",
    "script": {"steps": [{"text": "Hello."}]}
  },
  "notes": {
    "provider": "scripted",
    "script": {"steps": [{"text": "Noted, and filed with the rest of the notes for later."}]},
    "compaction": {"inputTokens": 60, "keepTurns": 1, "script": {"steps": [{"text": "Earlier notes were filed."}]}}
  },
  "guarded": {
    "provider": "scripted",
    "script": {"steps": [{"delay": "600ms", "text": "The door code is 4711-0815, as you asked."}]},
    "guardrails": [
      {"name": "no-door-codes", "stage": "output", "patterns": ["\\b\\d{4}-\\d{4}\\b"], "reason": "That answer held a door code."},
      {"name": "polite", "stage": "input", "maxLength": 500}
    ],
    "limits": {"liveFlush": "100ms"}
  }
}}`

// stack is the dev server's wiring in-process (kumo, the template's
// resources, the operator API, the resume poller and the tick), with the
// poller's context in the test's hands so that an invocation can be killed.
type stack struct {
	t        *testing.T
	url      string // the operator API
	app      *app.App
	queue    string
	log      *slog.Logger
	mu       sync.Mutex
	stopPol  func()
	requests []string // "METHOD /path" of every request the API served
}

// served returns the requests the API served so far.
func (s *stack) served() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

func newStack(t *testing.T, ctx context.Context, chargeURL string, identity func(*http.Request) (string, bool)) *stack {
	t.Helper()
	res, err := testenv.Provision(ctx, testenv.Emulator(), baton.Template())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	agents := filepath.Join(dir, "agents.json")
	if err := os.WriteFile(agents, []byte(strings.ReplaceAll(agentsJSON, "CHARGE_URL", chargeURL)), 0o600); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	a, err := app.NewWith(ctx, app.Resources{Table: res.Table, Bucket: res.Bucket, QueueURL: res.QueueURL, AgentFile: agents}, res.Clients(), log, app.Config{Tools: tool.Demo()})
	if err != nil {
		t.Fatal(err)
	}
	api := operator.New(operator.Config{Sessions: a.Sessions, Agents: a.Agents.Has, Log: log,
		StreamHold: 10 * time.Second, Identity: identity})
	s := &stack{t: t, app: a, queue: res.QueueURL, log: log}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Method+" "+r.URL.Path)
		s.mu.Unlock()
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	s.poll(ctx)
	tk := &tick.Tick{Sessions: a.Sessions, Waker: a.Waker, Log: log}
	tickCtx, stopTick := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-tickCtx.Done():
				return
			case <-time.After(300 * time.Millisecond):
				if _, err := tk.Run(tickCtx); err != nil && tickCtx.Err() == nil {
					log.Warn("tick", "err", err)
				}
			}
		}
	})
	t.Cleanup(func() { stopTick(); wg.Wait(); s.kill() })
	return s
}

// poll starts the resume poller, as the Lambda event source mapping would.
func (s *stack) poll(ctx context.Context) {
	w := &worker.Worker{Sessions: s.app.Sessions, Runner: s.app.Runner, Log: s.log}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := worker.Poll(pctx, s.app.Clients.SQS, s.queue, w.HandleSQS, s.log); err != nil && pctx.Err() == nil {
			s.log.Error("poller stopped", "err", err)
		}
	}()
	s.mu.Lock()
	s.stopPol = func() { cancel(); <-done }
	s.mu.Unlock()
}

// kill stops the poller and every invocation it runs, as a crash would.
func (s *stack) kill() {
	s.mu.Lock()
	stop := s.stopPol
	s.stopPol = func() {}
	s.mu.Unlock()
	stop()
}

// call sends a JSON request to the operator API as the local operator.
func (s *stack) call(ctx context.Context, method, path, body string, into any) {
	s.t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(resp.Body)
		s.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if into != nil {
		if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
			s.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

// create creates a session of agent.
func (s *stack) create(ctx context.Context, agent string) string {
	var sess struct {
		ID string `json:"id"`
	}
	s.call(ctx, "POST", "/sessions", `{"agent":"`+agent+`"}`, &sess)
	return sess.ID
}

// post posts a message, which starts a turn.
func (s *stack) post(ctx context.Context, id, text string) {
	s.call(ctx, "POST", "/sessions/"+id+"/messages", `{"text":"`+text+`"}`, nil)
}

// session creates a session of agent and posts text to it.
func (s *stack) session(ctx context.Context, agent, text string) string {
	id := s.create(ctx, agent)
	s.post(ctx, id, text)
	return id
}

// chargeServer is the ledger agent's HTTP tool: its first request hangs
// until the caller goes away, and says so on started; later ones charge.
type chargeServer struct {
	*httptest.Server
	calls   atomic.Int32
	started chan struct{}
	release chan struct{}
}

func newChargeServer(t *testing.T) *chargeServer {
	c := &chargeServer{started: make(chan struct{}), release: make(chan struct{})}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.calls.Add(1) == 1 {
			close(c.started)
			select { // the invocation dies here
			case <-r.Context().Done():
			case <-c.release:
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"charged":true,"amount":5}`)
	}))
	t.Cleanup(c.Close)
	t.Cleanup(func() { close(c.release) })
	return c
}

// browser drives one headless Chromium tab.
type browser struct {
	t   *testing.T
	ctx context.Context
	dir string // screenshots
}

func newBrowser(t *testing.T, ctx context.Context) *browser {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing: .ci/run installs Debian's chromium package", chromium)
		}
		t.Skipf("%s is missing (apt-get install chromium); the console's browser test needs it", chromium)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelTab := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	dir := os.Getenv("BATON_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "test", "output", "console")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, ctx: bctx, dir: dir}
}

func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.fail("%s: %v", what, err)
	}
}

// eval returns the value of a JavaScript expression in the page.
func eval[T any](b *browser, js string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.fail("evaluate %s: %v", js, err)
	}
	return v
}

// waitFor polls a boolean JavaScript expression until it holds.
func (b *browser) waitFor(what, js string) {
	b.t.Helper()
	for {
		if ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool]("!!("+js+")")); err == nil && ok {
			return
		} else if b.ctx.Err() != nil {
			b.fail("timed out waiting for %s", what)
		}
		select {
		case <-b.ctx.Done():
			b.fail("timed out waiting for %s", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// fail saves a screenshot and the page's text, then fails the test.
func (b *browser) fail(format string, args ...any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(b.ctx), 5*time.Second)
	defer cancel()
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body.innerText"))
	png, _ := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if len(png) > 0 {
		_ = os.WriteFile(filepath.Join(b.dir, "failure.png"), png, 0o644)
	}
	b.t.Fatalf(format+"\npage text:\n%s", append(args, text)...)
}

// shot saves a full-page PNG screenshot as name.png.
func (b *browser) shot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.fail("screenshot %s: %v", name, err)
	}
	path := filepath.Join(b.dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", path)
}

func (b *browser) open(url string) {
	b.t.Helper()
	b.run("open "+url, chromedp.Navigate(url))
}

// JavaScript the tests read the page with.
const (
	jsTurnText = `[...document.querySelectorAll('#turn .text')].map(e => e.textContent).join('')`
	jsFinished = `document.querySelector('#turn .marker.finish') !== null`
	jsStatus   = `document.querySelector('#status')?.textContent || ''`
	// jsRunningUsage is the session's usage while its turn runs and has
	// completed steps, "" otherwise.
	jsRunningUsage = `(() => { const u = document.querySelector('#usage')?.textContent || '';
		return document.querySelector('#status')?.textContent === 'running' && /[1-9]\d* in \/ [1-9]\d* out · [1-9]\d* steps/.test(u) ? u : ''; })()`
)

// jsToolAnswer holds when the tool call card of tool shows answer, and
// every card names its tool.
func jsToolAnswer(tool, answer string) string {
	return fmt.Sprintf(`(() => { const cards = [...document.querySelectorAll('#turn .tool')];
		return cards.every(c => c.querySelector('strong').textContent !== 'tool') &&
			cards.some(c => c.querySelector('strong').textContent === %s && c.querySelector('.answer')?.textContent.includes(%s)); })()`,
		jsString(tool), jsString(answer))
}

func jsString(s string) string { b, _ := json.Marshal(s); return string(b) }

func jsHasText(sel, text string) string {
	return fmt.Sprintf(`[...document.querySelectorAll(%s)].some(e => e.textContent.includes(%s))`, jsString(sel), jsString(text))
}

// TestConsoleInChromium drives the console in a real headless Chromium
// against the in-process stack: the sessions list, a turn's text appearing
// live, an approval from the page and the turn completing, a denial with a
// reason on another session, an uncertain execution settled from the page,
// and a turn cancelled with a reason. Screenshots go to BATON_SCREENSHOTS, or test/output/console.
func TestConsoleInChromium(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := newBrowser(t, ctx)
	charge := newChargeServer(t)
	local := func(r *http.Request) (string, bool) {
		if id := r.Header.Get("X-Baton-Operator"); id != "" {
			return id, true
		}
		return "local", true
	}
	s := newStack(t, ctx, charge.URL, local)

	// The sessions list.
	cancelID := s.session(ctx, "live", "Hello") // another session, for the list and to cancel
	approveID := s.create(ctx, "live")
	b.open(s.url + "/console")
	b.waitFor("the session in the list", fmt.Sprintf(`document.querySelector('#sessions tr[data-id=%s]')`, jsString(approveID)))
	b.waitFor("the session's usage in the list", `[...document.querySelectorAll('#sessions td.usage')].some(e => e.textContent.includes('steps'))`)
	b.shot("01-sessions")

	// The live turn: the text grows while the turn is open.
	b.run("open the session", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#sessions tr[data-id=%s] a`, jsString(approveID)))))
	b.waitFor("the session page", jsHasText(`#turn`, "No turn yet"))
	s.post(ctx, approveID, "Send the team a status update")
	var seen []string
	usageWhileRunning := ""
	for {
		if u := eval[string](b, jsRunningUsage); u != "" && usageWhileRunning == "" {
			usageWhileRunning = u
		}
		text := eval[string](b, jsTurnText)
		finished := eval[bool](b, jsFinished)
		if finished {
			b.fail("the turn finished before its text was seen growing: %q", seen)
		}
		if text != "" && (len(seen) == 0 || text != seen[len(seen)-1]) {
			if len(seen) > 0 && !strings.HasPrefix(text, seen[len(seen)-1]) {
				b.fail("the text was replaced, not extended: %q then %q", seen[len(seen)-1], text)
			}
			seen = append(seen, text)
			if len(seen) == 2 {
				b.shot("02-live-text")
			}
		}
		if strings.Contains(text, "operator has to approve") {
			break
		}
		select {
		case <-ctx.Done():
			b.fail("timed out watching the text; seen %q", seen)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if len(seen) < 3 {
		t.Fatalf("the text appeared in %d observations, want it growing across at least 3: %q", len(seen), seen)
	}
	t.Logf("live text observed in %d states: %q", len(seen), seen)
	// The first turn's usage shows while it runs, before it ever suspends.
	if usageWhileRunning == "" {
		b.fail("the running turn's usage never showed: no running state with completed steps in #usage")
	}
	t.Logf("usage while the first turn ran: %q", usageWhileRunning)
	b.waitFor("the weather tool's output", jsHasText(`#turn .tool`, `"city"`))
	b.waitFor("reasoning, collapsed", `document.querySelector('#turn details.reasoning') && !document.querySelector('#turn details.reasoning').open`)

	// Approve from the page; the turn completes.
	b.waitFor("the approval card", `document.querySelector('#approvals .approval button.approve')`)
	b.waitFor("the suspended status", jsHasText(`#status`, "suspended: approval"))
	b.run("type a reason", chromedp.SendKeys(chromedp.CSS(`#approvals .approval input.reason`), "fine to send"))
	b.shot("03-approval")
	b.run("approve", chromedp.Click(chromedp.CSS(`#approvals .approval button.approve`)))
	b.waitFor("the turn to finish", jsFinished)
	b.waitFor("the idle status", `(`+jsStatus+`) === 'idle'`)
	b.waitFor("the approval card to go", `!document.querySelector('#approvals .approval')`)
	b.waitFor("the approval on the email's tool call", jsToolAnswer("send_email", "Approved: fine to send"))
	b.waitFor("the final text", jsHasText(`#turn .text`, "Done: the weather in Lisbon is clear."))
	b.waitFor("turn.completed in the timeline", `document.querySelector('#timeline li[data-type="turn.completed"]')`)
	b.waitFor("the operator's approval in the timeline", jsHasText(`#timeline li[data-type="approval.answered"]`, "approve: fine to send"))
	b.shot("04-completed")

	// Deny, with a reason, on another session.
	denyID := s.session(ctx, "brisk", "Send the team a status update")
	b.open(s.url + "/console/#/s/" + denyID)
	b.waitFor("the approval card", `document.querySelector('#approvals .approval button.deny')`)
	b.run("type a reason", chromedp.SendKeys(chromedp.CSS(`#approvals .approval input.reason`), "not to the whole team"))
	b.run("deny", chromedp.Click(chromedp.CSS(`#approvals .approval button.deny`)))
	b.waitFor("the turn to finish", jsFinished)
	b.waitFor("the denial on the tool call", jsHasText(`#turn .tool .state`, "denied"))
	b.waitFor("the denial's reason on the email's tool call", jsToolAnswer("send_email", "Denied: not to the whole team"))
	b.waitFor("the denial in the timeline", jsHasText(`#timeline li[data-type="approval.answered"]`, "deny: not to the whole team"))
	b.waitFor("the idle status", `(`+jsStatus+`) === 'idle'`)
	b.shot("05-denied")

	// Edit the call's input from the page: bad JSON is refused there, an
	// input the schema refuses by the API; the edited one runs.
	editID := s.session(ctx, "brisk", "Send the team a status update")
	b.open(s.url + "/console/#/s/" + editID)
	b.waitFor("the approval card", `document.querySelector('#approvals .approval textarea.edit-input')`)
	b.run("open the editor", chromedp.Click(chromedp.CSS(`#approvals .approval details.edit summary`)))
	setInput := func(v string) {
		b.run("type the input", chromedp.SetValue(chromedp.CSS(`#approvals .approval textarea.edit-input`), v))
		b.run("approve as edited", chromedp.Click(chromedp.CSS(`#approvals .approval button.edit`)))
	}
	setInput(`{"to": `)
	b.waitFor("the JSON error", jsHasText(`#approvals .approval .error`, "not JSON"))
	setInput(`{"to": 5, "subject": "s"}`)
	b.waitFor("the schema's refusal", jsHasText(`#approvals .approval .error`, "the edited input"))
	setInput(`{"to": "ops@example.com", "subject": "Edited in the console"}`)
	b.waitFor("the turn to finish", jsFinished)
	b.waitFor("the edited input on the tool call", jsHasText(`#turn .tool[data-call] pre.edited`, "ops@example.com"))
	b.waitFor("the tool's output for the edited input", jsHasText(`#turn .tool .out`, "ops@example.com"))
	b.waitFor("the edit in the timeline", jsHasText(`#timeline li[data-type="approval.answered"]`, "edit"))
	b.shot("05b-edited")

	// An uncertain execution: the invocation dies while the charge runs.
	ledgerID := s.session(ctx, "ledger", "Charge the card")
	select {
	case <-charge.started:
	case <-ctx.Done():
		t.Fatal("the charge never started")
	}
	s.kill()
	s.poll(ctx) // a fresh worker; the tick reaps the dead lease and wakes it
	b.open(s.url + "/console/#/s/" + ledgerID)
	b.waitFor("the uncertain execution", `document.querySelector('#uncertain .execution button.rerun')`)
	b.waitFor("the suspended status", jsHasText(`#status`, "suspended: uncertain"))
	b.waitFor("the charge marked uncertain", jsHasText(`#turn .tool .state`, "uncertain"))
	b.shot("06-uncertain")
	b.run("rerun", chromedp.Click(chromedp.CSS(`#uncertain .execution button.rerun`)))
	b.waitFor("the turn to finish", jsFinished)
	b.waitFor("the charge's output", jsHasText(`#turn .tool .out pre`, `"charged": true`))
	b.waitFor("the verdict in the timeline", jsHasText(`#timeline li[data-type="execution.verdict"]`, "rerun"))
	b.waitFor("the idle status", `(`+jsStatus+`) === 'idle'`)
	b.waitFor("the uncertain card to go", `!document.querySelector('#uncertain .execution')`)
	b.shot("07-settled")
	if n := charge.calls.Load(); n != 2 {
		t.Fatalf("the charge ran %d times, want 2 (the lost one and the rerun)", n)
	}

	// Cancel, with a reason, the turn still waiting for its approval.
	b.open(s.url + "/console/#/s/" + cancelID)
	b.waitFor("the approval card", `document.querySelector('#approvals .approval')`)
	b.run("type a reason", chromedp.SendKeys(chromedp.CSS(`#cancel-reason`), "changed my mind"))
	b.run("cancel", chromedp.Click(chromedp.CSS(`#cancel`)))
	b.waitFor("turn.cancelled in the timeline", jsHasText(`#timeline li[data-type="turn.cancelled"]`, "changed my mind"))
	b.waitFor("the idle status", `(`+jsStatus+`) === 'idle'`)
	b.waitFor("the approval card to go", `!document.querySelector('#approvals .approval')`)
	b.waitFor("the cancel button to go", `!document.querySelector('#cancel')`)
	b.waitFor("the stream's end", jsHasText(`#turn .marker.finish`, "Turn finished (cancelled)"))
	b.shot("08-cancelled")
}

// errUnauthorized is a bearer token the test's identity does not know.
var errUnauthorized = errors.New("unauthorized")

// TestConsoleSignIn: behind an API that wants a bearer token (as the JWT
// authorizer does in the deployed API), the console asks for one, sends it
// as Authorization: Bearer on every call, stream reads included, and shows
// only that identity's sessions.
func TestConsoleSignIn(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := newBrowser(t, ctx)
	var streamAuthed atomic.Bool
	tokens := map[string]string{"token-for-alice": "alice", "token-for-bob": "bob"}
	identity := func(r *http.Request) (string, bool) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		who, known := tokens[tok]
		if ok && known && strings.HasSuffix(r.URL.Path, "/stream") {
			streamAuthed.Store(true)
		}
		return who, ok && known
	}
	s := newStack(t, ctx, "http://127.0.0.1:1", identity)
	aliceID := create(t, ctx, s, "token-for-alice")
	bobID := create(t, ctx, s, "token-for-bob")

	b.open(s.url + "/console/")
	b.waitFor("the sign-in form", `document.querySelector('#signin textarea#token')`)
	b.shot("09-sign-in")
	b.run("paste a token", chromedp.SendKeys(chromedp.CSS(`#signin textarea#token`), "token-for-alice"))
	b.run("sign in", chromedp.Click(chromedp.CSS(`#signin button[type=submit]`)))
	b.waitFor("alice's session", fmt.Sprintf(`document.querySelector('#sessions tr[data-id=%s]')`, jsString(aliceID)))
	rows := eval[int](b, `document.querySelectorAll('#sessions tbody tr[data-id]').length`)
	bobShown := eval[bool](b, fmt.Sprintf(`!!document.querySelector('#sessions tr[data-id=%s]')`, jsString(bobID)))
	if rows != 1 || bobShown {
		t.Fatalf("alice sees %d sessions (bob's among them: %v), want only hers", rows, bobShown)
	}
	b.open(s.url + "/console/#/s/" + aliceID)
	b.waitFor("the turn's text", jsHasText(`#turn .text`, "Lisbon"))
	if !streamAuthed.Load() {
		t.Fatal("the stream was never read with alice's token")
	}
	// Bob's session is not found for alice.
	b.open(s.url + "/console/#/s/" + bobID)
	b.waitFor("bob's session refused", jsHasText(`#failure`, "session not found"))
	// Signing out forgets the token.
	b.open(s.url + "/console/")
	b.waitFor("the sign-out button", `document.querySelector('#signout')`)
	b.run("sign out", chromedp.Click(chromedp.CSS(`#signout`)))
	b.waitFor("the sign-in form again", `document.querySelector('#signin')`)
	stored := eval[string](b, `sessionStorage.getItem('baton.token') || ''`)
	if stored != "" {
		t.Fatalf("the token is still stored after signing out: %q", stored)
	}
}

// create makes a live session as the token's owner and posts to it.
func create(t *testing.T, ctx context.Context, s *stack, token string) string {
	t.Helper()
	do := func(method, path, body string, into any) {
		req, _ := http.NewRequestWithContext(ctx, method, s.url+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
		}
		if into != nil {
			_ = json.NewDecoder(resp.Body).Decode(into)
		}
	}
	var sess struct {
		ID string `json:"id"`
	}
	do("POST", "/sessions", `{"agent":"live"}`, &sess)
	do("POST", "/sessions/"+sess.ID+"/messages", `{"text":"Status?"}`, nil)
	return sess.ID
}

// TestTurnViewMarksAbandonedStep feeds the page's turn view the parts of a
// turn whose invocation died mid-step (as pkg/turn writes them: the partial
// step, data-abandoned, data-resumed, the redone step) and checks the cut
// step is marked abandoned, the redone one is not, and reasoning is
// collapsed.
func TestTurnViewMarksAbandonedStep(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := newBrowser(t, ctx)
	srv := httptest.NewServer(noIdentity())
	defer srv.Close()
	b.open(srv.URL + "/console/")
	b.waitFor("the page", `document.querySelector('#signin')`)
	parts := `[
		{"type":"start","messageId":"turn_1"},
		{"type":"start-step"},
		{"type":"reasoning-start","id":"r0"},{"type":"reasoning-delta","id":"r0","delta":"Think first."},{"type":"reasoning-end","id":"r0"},
		{"type":"text-start","id":"t0"},{"type":"text-delta","id":"t0","delta":"Half of a "},
		{"type":"data-abandoned","data":{"reason":"the invocation ended mid-step; the step is redone"}},
		{"type":"data-resumed","data":{"invocation":2}},
		{"type":"start-step"},
		{"type":"text-start","id":"t0"},{"type":"text-delta","id":"t0","delta":"The whole answer."},{"type":"text-end","id":"t0"},
		{"type":"tool-input-available","toolCallId":"tc_1","toolName":"get_weather","input":{"city":"Lisbon"}},
		{"type":"finish-step"},
		{"type":"tool-output-error","toolCallId":"tc_1","errorText":"no such city"},
		{"type":"finish","finishReason":"stop"}
	]`
	type result struct {
		Steps, Abandoned     int
		AbandonedText, Marks string
		ReasoningOpen        bool
		ToolState, ToolError string
	}
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[result](`import('./turn.js').then(({ TurnView }) => {
		const root = document.createElement('div');
		root.id = 'turn';
		document.body.append(root);
		const tv = new TurnView(root);
		for (const p of `+parts+`) tv.add(p);
		const ab = root.querySelector('.step.abandoned');
		return {
			Steps: root.querySelectorAll('.step').length,
			Abandoned: root.querySelectorAll('.step.abandoned').length,
			AbandonedText: ab ? ab.querySelector('.text').textContent : '',
			Marks: [...root.querySelectorAll('.marker')].map(m => m.textContent).join(' | '),
			ReasoningOpen: root.querySelector('details.reasoning').open,
			ToolState: root.querySelector('.tool .state').textContent,
			ToolError: root.querySelector('.tool .out').textContent,
		};
	})`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	want := result{Steps: 2, Abandoned: 1, AbandonedText: "Half of a ",
		Marks:         "Step abandoned: the invocation ended mid-step; the step is redone | Resumed (invocation 2) | Turn finished (stop)",
		ReasoningOpen: false, ToolState: "error", ToolError: "no such city"}
	if got != want {
		t.Fatalf("turn view\n got %+v\nwant %+v", got, want)
	}
}

// TestConsoleOperatorActions drives the console's limit, timer and schedule
// controls in Chromium: a turn suspended at its spend cap shows its usage
// and cost as the API reports them and resumes when a cap is raised from
// the page; a schedule is set and cleared from the page; a turn waiting on
// wait_until has its timer moved, then ended, from the page.
func TestConsoleOperatorActions(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := newBrowser(t, ctx)
	s := newStack(t, ctx, "http://127.0.0.1:1", func(*http.Request) (string, bool) { return "local", true })

	// A turn suspended at its cost cap after one step.
	limitedID := s.session(ctx, "limited", "Weather?")
	b.open(s.url + "/console/#/s/" + limitedID)
	b.waitFor("the spend cap card", `document.querySelector('#limit .limit button#raise')`)
	b.waitFor("the suspended status", jsHasText(`#status`, "suspended: limit"))
	var view api.Session
	s.call(ctx, "GET", "/sessions/"+limitedID, "", &view)
	if view.Usage.Steps != 1 || view.Usage.CostMicroUSD == 0 {
		t.Fatalf("the API's usage at the cap = %+v, want one priced step", view.Usage)
	}
	want := fmt.Sprintf("%d in / %d out · 1 steps · $%.6f", view.Usage.InputTokens, view.Usage.OutputTokens, float64(view.Usage.CostMicroUSD)/1e6)
	if got := eval[string](b, `document.querySelector('#usage').textContent`); got != want {
		b.fail("the page's usage is %q, want the API's %q", got, want)
	}
	if got := eval[string](b, `document.querySelector('#turn-usage').textContent`); got != want {
		b.fail("the page's turn usage is %q, want the API's %q", got, want)
	}
	// The card names the cap the turn reached, as the API does, and marks
	// its field.
	if l := view.Turn.Limit; l == nil || l.Scope != reducer.ScopeTurn || l.Measure != reducer.MeasureCost {
		t.Fatalf("the API's limit = %+v, want the turn's cost cap", view.Turn.Limit)
	}
	used := fmt.Sprintf("$%.6f", view.Turn.Limit.Usage)
	b.waitFor("the cap named on the card", jsHasText(`#limit-cap`, "The turn reached the turn cost cap of $0.000001, at "+used)+" && "+
		jsHasText(`#limit-cap`, "Raise the turn cost cap past "+used))
	b.waitFor("the named cap's field marked", `document.querySelector('#raise-turn-cost').classList.contains('named') && !document.querySelector('#raise-session-cost').classList.contains('named')`)
	b.waitFor("the limit in the timeline", jsHasText(`#timeline li[data-type="turn.suspended"]`, "limit: the turn cost cap of $0.000001"))
	b.run("raise nothing", chromedp.Click(chromedp.CSS(`#raise`)))
	b.waitFor("the empty raise refused on the page", jsHasText(`#limit .error`, "Enter a cap to raise."))
	// Raising another cap is refused with the API's message; nothing moves.
	b.run("type a session cost cap", chromedp.SendKeys(chromedp.CSS(`#raise-session-cost`), "5"))
	b.run("raise the wrong cap", chromedp.Click(chromedp.CSS(`#raise`)))
	b.waitFor("the wrong raise refused on the page", jsHasText(`#limit .error`, "raise turn.cost past "+used))
	s.call(ctx, "GET", "/sessions/"+limitedID, "", &view)
	if view.Status != reducer.Suspended || view.Caps != (reducer.Caps{}) {
		t.Fatalf("after the refused raise: status %q, caps %+v", view.Status, view.Caps)
	}
	b.run("clear the session cost cap", chromedp.SetValue(chromedp.CSS(`#raise-session-cost`), ""))
	b.run("type a turn cost cap", chromedp.SendKeys(chromedp.CSS(`#raise-turn-cost`), "5"))
	b.shot("10-limit")
	b.run("raise", chromedp.Click(chromedp.CSS(`#raise`)))
	b.waitFor("the turn to finish", jsFinished)
	b.waitFor("the idle status", `(`+jsStatus+`) === 'idle'`)
	b.waitFor("the raise in the timeline", jsHasText(`#timeline li[data-type="limits.raised"]`, "turn: $5"))
	b.waitFor("the card to go", `!document.querySelector('#limit .limit')`)
	b.waitFor("the final text", jsHasText(`#turn .text`, "Lisbon is clear."))
	s.call(ctx, "GET", "/sessions/"+limitedID, "", &view)
	want = fmt.Sprintf("%d in / %d out · 2 steps · $%.6f", view.Usage.InputTokens, view.Usage.OutputTokens, float64(view.Usage.CostMicroUSD)/1e6)
	b.waitFor("the usage of both steps", fmt.Sprintf(`document.querySelector('#usage').textContent === %s`, jsString(want)))
	if view.Caps.Cost != 0 || view.Turns != 1 {
		t.Fatalf("after the raise: caps %+v, turns %d", view.Caps, view.Turns)
	}

	// The schedule editor, on the same session.
	b.waitFor("no schedule", jsHasText(`#schedule-now`, "No schedule."))
	b.run("type a cron", chromedp.SendKeys(chromedp.CSS(`#schedule-cron`), "0 9 * * 1"))
	b.run("type a text", chromedp.SendKeys(chromedp.CSS(`#schedule-text`), "Weekly report"))
	b.run("set the schedule", chromedp.Click(chromedp.CSS(`#schedule-save`)))
	b.waitFor("the schedule shown", jsHasText(`#schedule-now`, "0 9 * * 1")+" && "+jsHasText(`#schedule-now`, "Weekly report")+" && "+jsHasText(`#schedule-now`, "next"))
	b.waitFor("schedule.set in the timeline", jsHasText(`#timeline li[data-type="schedule.set"]`, "0 9 * * 1: “Weekly report”"))
	s.call(ctx, "GET", "/sessions/"+limitedID, "", &view)
	if view.Schedule == nil || view.Schedule.Cron != "0 9 * * 1" || view.Schedule.Text != "Weekly report" {
		t.Fatalf("the API's schedule = %+v", view.Schedule)
	}
	b.shot("11-schedule")
	// A bad cron is refused with the API's message and changes nothing.
	b.run("clear the cron", chromedp.SetValue(chromedp.CSS(`#schedule-cron`), "every monday"))
	b.run("save a bad cron", chromedp.Click(chromedp.CSS(`#schedule-save`)))
	b.waitFor("the refusal", `(document.querySelector('#schedule .error')?.textContent || '').includes('cron')`)
	b.run("clear the schedule", chromedp.Click(chromedp.CSS(`#schedule-clear`)))
	b.waitFor("the schedule gone", jsHasText(`#schedule-now`, "No schedule."))
	b.waitFor("schedule.cleared in the timeline", `document.querySelector('#timeline li[data-type="schedule.cleared"]')`)

	// A turn waiting on wait_until: move its timer, then end it.
	waiterID := s.session(ctx, "waiter", "Wait for me")
	b.open(s.url + "/console/#/s/" + waiterID)
	b.waitFor("the timer card", `document.querySelector('#timer .timer button#timer-now')`)
	b.waitFor("the suspended status", jsHasText(`#status`, "suspended: timer"))
	if ends := eval[string](b, `document.querySelector('#timer-ends').title`); !strings.HasPrefix(ends, "2099-01-01T00:00:00") {
		b.fail("the timer ends %q, want 2099-01-01", ends)
	}
	b.run("pick a new end", chromedp.SetValue(chromedp.CSS(`#timer-at`), "2098-06-01T12:00"))
	b.run("move the timer", chromedp.Click(chromedp.CSS(`#timer-move`)))
	b.waitFor("timer.set in the timeline", `document.querySelector('#timeline li[data-type="timer.set"]')`)
	b.waitFor("the new end", `(document.querySelector('#timer-ends')?.title || '').startsWith('2098-06-01')`)
	b.shot("12-timer")
	b.run("wake now", chromedp.Click(chromedp.CSS(`#timer-now`)))
	b.waitFor("the turn to finish", jsFinished)
	b.waitFor("the idle status", `(`+jsStatus+`) === 'idle'`)
	b.waitFor("the final text", jsHasText(`#turn .text`, "Awake again."))
	b.waitFor("the card to go", `!document.querySelector('#timer .timer')`)
}

// TestConsoleShowsCompactions: a session whose agent compacted its history
// shows how often on its page, the turn that compacted marks it, and the
// timeline has the fact.
func TestConsoleShowsCompactions(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := newBrowser(t, ctx)
	s := newStack(t, ctx, "http://127.0.0.1:1", func(*http.Request) (string, bool) { return "local", true })
	id := s.create(ctx, "notes")
	var view api.Session
	for i := range 4 {
		s.post(ctx, id, fmt.Sprintf("Note %d: file this, please.", i))
		for view.Turns != int64(i+1) || view.Status != reducer.Idle {
			if ctx.Err() != nil {
				t.Fatalf("turn %d did not end: %+v", i, view)
			}
			time.Sleep(50 * time.Millisecond)
			s.call(ctx, "GET", "/sessions/"+id, "", &view)
		}
	}
	if view.Compactions == 0 {
		t.Fatalf("no compaction in four turns: %+v", view)
	}
	b.open(s.url + "/console/#/s/" + id)
	b.waitFor("the compactions", fmt.Sprintf(`document.querySelector('#compactions')?.textContent === %s`, jsString(fmt.Sprint(view.Compactions))))
	b.waitFor("the fact in the timeline", jsHasText(`#timeline li[data-type="context.compacted"]`, "turns summarised"))
	b.waitFor("the turn's marker", jsHasText(`#turn .marker`, "Context compacted"))
	b.shot("11-compactions")
}

// TestConsoleShowsSteering: a message posted while a steer agent's turn
// runs shows in the turn where it was steered in, and the timeline says
// how it was delivered.
func TestConsoleShowsSteering(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := newBrowser(t, ctx)
	s := newStack(t, ctx, "http://127.0.0.1:1", func(*http.Request) (string, bool) { return "local", true })
	id := s.session(ctx, "steerable", "Weather?")
	b.open(s.url + "/console/#/s/" + id)
	b.waitFor("the first step under way", jsHasText(`#turn`, "Checking"))
	s.post(ctx, id, "Porto too, please.")
	b.waitFor("the steered message in the turn", jsHasText(`#turn .marker`, "Steered in: Porto too, please."))
	b.waitFor("the turn to finish", jsFinished)
	b.waitFor("the delivery in the timeline", jsHasText(`#timeline li[data-type="message.received"]`, "(steer)"))
	b.waitFor("the steering fact in the timeline", jsHasText(`#timeline li[data-type="message.steered"]`, "steered in"))
	b.shot("12-steering")
}

// TestConsoleChildPageAndNewSessionBox: a child session's page shows its
// Parent link apart from its Usage (a long session id used to run over
// it), and the New session box is not filled with an agent this server
// does not have (it said "demo" on every server), but with the agent of
// the newest session listed.
func TestConsoleChildPageAndNewSessionBox(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := newBrowser(t, ctx)
	s := newStack(t, ctx, "http://127.0.0.1:1", func(*http.Request) (string, bool) { return "local", true })
	b.open(s.url + "/console/#/")
	b.waitFor("the empty list", jsHasText(`#sessions`, "No sessions yet."))
	if box := eval[string](b, `document.querySelector('#agent').value`); box != "" {
		t.Fatalf("the New session box of a server with no sessions holds %q, want it empty", box)
	}
	id := s.session(ctx, "boss", "Go.")
	var view api.Session
	for view.Turns != 1 || view.Status != reducer.Idle {
		if ctx.Err() != nil {
			t.Fatalf("the boss's turn did not end: %+v", view)
		}
		time.Sleep(50 * time.Millisecond)
		s.call(ctx, "GET", "/sessions/"+id, "", &view)
	}
	var facts api.Facts
	s.call(ctx, "GET", "/sessions/"+id+"/facts", "", &facts)
	child := ""
	for _, f := range facts.Facts {
		if f.Type == reducer.ChildStarted && f.Child != nil {
			child = f.Child.ID
		}
	}
	if child == "" {
		t.Fatal("the boss started no child session")
	}
	b.open(s.url + "/console/#/s/" + child)
	b.waitFor("the parent link", `document.querySelector('#parent-link')`)
	b.waitFor("the usage", `document.querySelector('#usage')`)
	apart := eval[bool](b, `(() => {
		const box = e => e.closest('div').getBoundingClientRect();
		const p = box(document.querySelector('#parent-link')), u = box(document.querySelector('#usage'));
		const link = document.querySelector('#parent-link').getBoundingClientRect();
		const inside = link.right <= p.right + 0.5 && link.bottom <= p.bottom + 0.5;
		const overlap = p.left < u.right && u.left < p.right && p.top < u.bottom && u.top < p.bottom;
		return inside && !overlap;
	})()`)
	b.shot("13-child-page")
	if !apart {
		t.Fatal("the Parent link runs over its cell or overlaps Usage")
	}
	b.open(s.url + "/console/#/")
	b.waitFor("the listed sessions", `document.querySelectorAll('#sessions tr[data-id]').length >= 1`)
	b.waitFor("the box filled with the newest session's agent", `['boss', 'helper'].includes(document.querySelector('#agent').value)`)
}
