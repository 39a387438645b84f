package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// streamed answers like a Function URL in RESPONSE_STREAM mode: the
// prelude's status and headers, then each chunk as it comes, flushed; the
// connection is cut (no terminating chunk) at the max duration or after the
// idle timeout, and bytes past Uncapped are paced to Bandwidth.
func (f *Front) streamed(ctx context.Context, w http.ResponseWriter, res *Result) {
	br := bufio.NewReader(res.Body)
	if res.ContentType != streamingContentType {
		buffered(w, br, res) // a function that does not stream
		return
	}
	head, err := readPrelude(br)
	if err != nil {
		doorError(w, http.StatusBadGateway, "Bad Gateway")
		return
	}
	writeHead(w, head)
	rc := http.NewResponseController(w)
	_ = rc.Flush()

	chunks, readErr := readChunks(ctx, br)
	var sent int
	idle := f.Limits.Idle
	var idleC <-chan time.Time
	var timer *time.Timer
	if idle > 0 {
		timer = time.NewTimer(idle)
		defer timer.Stop()
		idleC = timer.C
	}
	for {
		select {
		case b := <-chunks:
			if err := f.pace(ctx, sent, len(b)); err != nil {
				f.cut()
			}
			sent += len(b)
			if _, err := w.Write(b); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
			if timer != nil {
				timer.Reset(idle)
			}
		case err := <-readErr:
			if err != io.EOF || res.FunctionError() != "" {
				f.cut() // a stream that failed ends without its last chunk
			}
			return
		case <-idleC:
			f.cut()
		case <-ctx.Done():
			f.cut()
		}
	}
}

// buffered relays a buffered function URL answer: its status, headers and
// body, or a 502 when it is not one.
func buffered(w http.ResponseWriter, br *bufio.Reader, res *Result) {
	b, err := io.ReadAll(br)
	var resp events.LambdaFunctionURLResponse
	if err != nil || res.FunctionError() != "" || json.Unmarshal(b, &resp) != nil || resp.StatusCode == 0 {
		doorError(w, http.StatusBadGateway, "Bad Gateway")
		return
	}
	writeAnswer(w, prelude{StatusCode: resp.StatusCode, Headers: resp.Headers, Cookies: resp.Cookies}, resp.Body, resp.IsBase64Encoded)
}

// readChunks reads br in a goroutine, sending what each read returns on
// the first channel until the read's error, or ctx's, on the second.
func readChunks(ctx context.Context, br *bufio.Reader) (<-chan []byte, <-chan error) {
	chunks := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		for {
			buf := make([]byte, 32<<10)
			n, err := br.Read(buf)
			if n > 0 {
				select {
				case chunks <- buf[:n]:
				case <-ctx.Done():
					readErr <- ctx.Err()
					return
				}
			}
			if err != nil {
				readErr <- err
				return
			}
		}
	}()
	return chunks, readErr
}

// pace waits as the bandwidth cap would before n more bytes go out after
// sent.
func (f *Front) pace(ctx context.Context, sent, n int) error {
	if f.Limits.Bandwidth <= 0 || sent+n <= f.Limits.Uncapped {
		return nil
	}
	over := sent + n - max(f.Limits.Uncapped, sent)
	d := time.Duration(float64(over) / float64(f.Limits.Bandwidth) * float64(time.Second))
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// cut ends the response the way a door's limit does: the connection
// closes without the last chunk, so the client sees the stream fail.
func (f *Front) cut() {
	f.Stats.Cut.Add(1)
	panic(http.ErrAbortHandler)
}
