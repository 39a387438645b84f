// Command drip is a test function for the harness's front doors: through
// internal/lambdahttp it answers ?n=<chunks>&gap=<duration>&size=<bytes> with n
// chunks of size bytes, gap apart, each flushed; streamed for a Function
// URL event, buffered otherwise.
package main

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/baton-run/baton/internal/lambdahttp"
)

func drip(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n, _ := strconv.Atoi(q.Get("n"))
	size, _ := strconv.Atoi(q.Get("size"))
	gap, _ := time.ParseDuration(q.Get("gap"))
	if size <= 0 {
		size = 8
	}
	w.Header().Set("Content-Type", "text/plain")
	for i := range n {
		if i > 0 {
			time.Sleep(gap)
		}
		_, _ = w.Write([]byte(strings.Repeat(strconv.Itoa(i%10), size-1) + "\n"))
		w.(http.Flusher).Flush()
	}
}

func main() {
	streamed := lambdahttp.StreamingHandler(http.HandlerFunc(drip))
	buffered := lambdahttp.Handler(http.HandlerFunc(drip))
	lambda.Start(func(ctx context.Context, e events.APIGatewayV2HTTPRequest) (any, error) {
		if lambdahttp.FunctionURL(e) {
			return streamed(ctx, e)
		}
		return buffered(ctx, e)
	})
}
