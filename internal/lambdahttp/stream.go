package lambdahttp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/baton-run/baton/internal/httpjson"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"
)

// streamBuffer is how much of the handler's output is held before it goes
// out without a Flush.
const streamBuffer = 16 << 10

// FunctionURL reports whether e came through a Lambda Function URL (its
// domain is <url-id>.lambda-url.<region>.on.aws) rather than API Gateway.
// A Function URL event has the shape of an HTTP API payload 2.0 event.
func FunctionURL(e events.APIGatewayV2HTTPRequest) bool {
	return strings.Contains(e.RequestContext.DomainName, ".lambda-url.")
}

// StreamingHandler adapts h to a Lambda Function URL with InvokeMode
// RESPONSE_STREAM (and to any caller of InvokeWithResponseStream that
// speaks the same HTTP integration format). The request is built as
// Handler builds it. The response's status and headers go out when the
// handler first writes, flushes or returns; after that every Flush pushes
// the bytes written so far to the client at once, and writes beyond 16 KiB
// go out without one. If the client goes away (the runtime stops reading),
// the request's context is cancelled. A handler panic before the headers
// are out answers 500; after, it cuts the stream with an error, which
// Lambda reports as a function error.
//
// The returned function must be run by aws-lambda-go built with
// -tags lambda.norpc (the provided.al2023 runtime), which streams a
// response that is an io.Reader.
func StreamingHandler(h http.Handler, opts ...Option) func(ctx context.Context, e events.APIGatewayV2HTTPRequest) (*events.LambdaFunctionURLStreamingResponse, error) {
	o := newOptions(opts)
	return func(ctx context.Context, e events.APIGatewayV2HTTPRequest) (*events.LambdaFunctionURLStreamingResponse, error) {
		if o.context != nil {
			ctx = o.context(ctx, e)
		}
		ctx, cancel := context.WithCancel(ctx)
		r, err := Request(ctx, e)
		if err != nil {
			cancel()
			o.log.WarnContext(ctx, "lambdahttp: bad event", "requestId", e.RequestContext.RequestID, "err", err)
			return &events.LambdaFunctionURLStreamingResponse{
				StatusCode: http.StatusBadRequest,
				Headers:    map[string]string{"Content-Type": "text/plain; charset=utf-8"},
				Body:       strings.NewReader("bad request\n"),
			}, nil
		}
		pr, pw := io.Pipe()
		w := newStreamWriter(pw)
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() {
				if p := recover(); p != nil {
					o.log.ErrorContext(ctx, "lambdahttp: handler panicked", "requestId", e.RequestContext.RequestID,
						"method", r.Method, "path", httpjson.LogPath(r.URL.Path), "panic", fmt.Sprint(p))
					w.abort(fmt.Errorf("lambdahttp: handler panicked: %v", p))
				}
			}()
			h.ServeHTTP(w, r)
			w.finish()
		}()
		select {
		case <-w.committed:
		case <-done:
		}
		status, headers, cookies := w.head()
		return &events.LambdaFunctionURLStreamingResponse{
			StatusCode: status, Headers: headers, Cookies: cookies,
			Body: &streamBody{PipeReader: pr, cancel: cancel},
		}, nil
	}
}

// streamBody is the response body the runtime reads; closing it (the
// runtime does once the invocation's response is over, or failed) cancels
// the handler.
type streamBody struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (b *streamBody) Close() error {
	b.cancel()
	return b.PipeReader.Close()
}

// streamWriter is the http.ResponseWriter of a streamed answer.
type streamWriter struct {
	mu        sync.Mutex
	header    http.Header
	status    int
	sent      http.Header // the header as committed
	committed chan struct{}
	pw        *io.PipeWriter
	bw        *bufio.Writer
	err       error // the first write error: the client is gone
}

func newStreamWriter(pw *io.PipeWriter) *streamWriter {
	return &streamWriter{header: http.Header{}, committed: make(chan struct{}), pw: pw, bw: bufio.NewWriterSize(pw, streamBuffer)}
}

func (w *streamWriter) Header() http.Header { return w.header }

// commit fixes the status and headers; sniff is the first body bytes, for
// a Content-Type the handler did not set. w.mu is held.
func (w *streamWriter) commit(sniff []byte) {
	if w.sent != nil {
		return
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.header.Get("Content-Type") == "" && len(sniff) > 0 {
		w.header.Set("Content-Type", http.DetectContentType(sniff))
	}
	w.sent = w.header.Clone()
	close(w.committed)
}

func (w *streamWriter) WriteHeader(status int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sent == nil && w.status == 0 {
		w.status = status
	}
}

func (w *streamWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.commit(b)
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.bw.Write(b)
	if err != nil {
		w.err = fmt.Errorf("lambdahttp: client gone: %w", err)
		return n, w.err
	}
	return n, nil
}

// Flush sends the status and headers, if not yet sent, and every byte
// written so far.
func (w *streamWriter) Flush() { _ = w.FlushError() }

// FlushError is Flush reporting a client that went away (for
// http.ResponseController).
func (w *streamWriter) FlushError() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.commit(nil)
	if w.err != nil {
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("lambdahttp: client gone: %w", err)
	}
	return w.err
}

// finish ends a handler that returned: the rest goes out, and the stream
// ends.
func (w *streamWriter) finish() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.commit(nil)
	if w.err == nil {
		_ = w.bw.Flush()
	}
	_ = w.pw.Close()
}

// abort ends a handler that panicked: with a 500 if nothing was sent,
// else by cutting the stream with err.
func (w *streamWriter) abort(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sent == nil {
		w.header = http.Header{"Content-Type": {"text/plain; charset=utf-8"}}
		w.status = http.StatusInternalServerError
		w.commit(nil)
		_, _ = w.bw.WriteString("internal error\n")
		_ = w.bw.Flush()
		_ = w.pw.Close()
		return
	}
	_ = w.pw.CloseWithError(errors.Join(err, w.err))
}

// head returns the committed status, headers and cookies. It must be
// called once w.committed is closed (or the handler is done), and takes no
// lock: a Flush holds it while the pipe waits for its reader.
func (w *streamWriter) head() (int, map[string]string, []string) {
	h, c := lambdaHeaders(w.sent)
	return w.status, h, c
}
