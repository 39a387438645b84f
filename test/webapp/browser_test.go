package webapp_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browser drives one headless Chromium tab; origin is the app's.
type browser struct {
	t      *testing.T
	ctx    context.Context
	dir    string // screenshots
	origin string
}

func newBrowser(t *testing.T, ctx context.Context, origin string) *browser {
	t.Helper()
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
		chromedp.WindowSize(1100, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelTab := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	dir := os.Getenv("BATON_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join("..", "output", "webapp")
		if os.Getenv("BATON_WEBAPP_FRONT") != "" {
			dir += "-" + os.Getenv("BATON_WEBAPP_FRONT")
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, ctx: bctx, dir: dir, origin: origin}
}

// with returns the browser reporting to t.
func (b *browser) with(t *testing.T) *browser {
	c := *b
	c.t = t
	return &c
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

// waitFor polls a boolean JavaScript expression until it holds, for at
// most 30 s.
func (b *browser) waitFor(what, js string) {
	b.t.Helper()
	end := time.Now().Add(30 * time.Second)
	for {
		if ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool]("!!("+js+")")); err == nil && ok {
			return
		}
		if b.ctx.Err() != nil || time.Now().After(end) {
			b.fail("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
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
	if err := os.WriteFile(filepath.Join(b.dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

func (b *browser) open(url string) {
	b.t.Helper()
	b.run("open "+url, chromedp.Navigate(url))
}
