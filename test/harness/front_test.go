package harness

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	dripOnce sync.Once
	dripPath string
	dripErr  error
)

// startDoor runs the drip function behind a front with limits l.
func startDoor(t *testing.T, l Limits) (*Front, string) {
	t.Helper()
	dripOnce.Do(func() {
		dir, err := os.MkdirTemp("", "harness-drip-")
		if err != nil {
			dripErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		dripPath, dripErr = BuildBootstrap(ctx, "./test/harness/testdata/drip", filepath.Join(dir))
	})
	if dripErr != nil {
		t.Fatal(dripErr)
	}
	rt, err := StartRuntime(RuntimeConfig{Name: "drip", Bootstrap: dripPath, Timeout: l.Timeout, Output: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	domain := "drip.lambda-url.us-east-1.on.aws"
	if l.Door == BufferedHTTPAPI {
		domain = "drip.execute-api.us-east-1.amazonaws.com"
	}
	f := &Front{Limits: l, Runtime: rt, DomainName: domain}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func streamLimits() Limits {
	return Limits{Door: FunctionURL, Timeout: 10 * time.Second, MaxDuration: 10 * time.Second, MaxBuffered: 6 << 20, MaxRequest: 1 << 10}
}

// TestFrontStreamsChunks: through the Function URL door each chunk is read
// while the function still writes the next (the first arrives though the
// last is a long gap away), and the answer ends cleanly.
func TestFrontStreamsChunks(t *testing.T) {
	_, url := startDoor(t, streamLimits())
	resp, err := http.Get(url + "/?n=3&gap=300ms")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/plain" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		line, err := br.ReadString('\n')
		if err != nil || line != strings.Repeat(string(rune('0'+i)), 7)+"\n" {
			t.Fatalf("chunk %d: %q %v", i, line, err)
		}
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("end: %q %v", rest, err)
	}
}

// TestFrontCuts: a stream that outlasts the door's max duration, or goes
// quiet for longer than its idle timeout, is cut: the client sees an
// error after what came before.
func TestFrontCuts(t *testing.T) {
	for name, l := range map[string]Limits{
		"max duration": func() Limits { l := streamLimits(); l.MaxDuration = 700 * time.Millisecond; return l }(),
		"idle":         func() Limits { l := streamLimits(); l.Idle = 300 * time.Millisecond; return l }(),
	} {
		t.Run(name, func(t *testing.T) {
			f, url := startDoor(t, l)
			resp, err := http.Get(url + "/?n=3&gap=1s")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err == nil {
				t.Fatalf("the stream ended cleanly after %q", b)
			}
			if string(b) != "0000000\n" {
				t.Fatalf("got %q before the cut", b)
			}
			if f.Stats.Cut.Load() != 1 {
				t.Fatalf("Cut = %d", f.Stats.Cut.Load())
			}
		})
	}
}

// TestFrontBuffered: the HTTP API door answers whole, or 503 after its
// timeout; a request larger than the limit is a 413.
func TestFrontBuffered(t *testing.T) {
	l := Limits{Door: BufferedHTTPAPI, Timeout: 800 * time.Millisecond, MaxBuffered: 6 << 20, MaxRequest: 1 << 10}
	f, url := startDoor(t, l)
	resp, err := http.Get(url + "/?n=2&gap=10ms")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(b) != "0000000\n1111111\n" {
		t.Fatalf("fast answer: %d %q", resp.StatusCode, b)
	}
	resp, err = http.Get(url + "/?n=3&gap=1s")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || f.Stats.TimedOut.Load() != 1 {
		t.Fatalf("slow answer: %d, TimedOut %d", resp.StatusCode, f.Stats.TimedOut.Load())
	}
	resp, err = http.Post(url+"/", "text/plain", strings.NewReader(strings.Repeat("x", 2<<10)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("large request: %d", resp.StatusCode)
	}
}
