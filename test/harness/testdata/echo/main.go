// Command echo is the test function for package harness. It echoes its
// payload together with ECHO_TAG, the remaining time to its deadline and the
// Lambda context. Control fields in the payload change its behaviour:
//
//	{"sleep_ms": N}  sleep N ms (or until the deadline) before answering
//	{"fail": "msg"}  return an error with message msg
//	{"panic": "msg"} panic with msg
//
// An API Gateway HTTP API payload-2.0 event (one with a routeKey) is answered
// with a proxy response whose body echoes the event's route, path, body and
// JWT claims and the whole event, or with an error when it carries an
// X-Echo-Fail header.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

type control struct {
	SleepMS  int    `json:"sleep_ms"`
	Fail     string `json:"fail"`
	Panic    string `json:"panic"`
	RouteKey string `json:"routeKey"`
}

// Echo is the response to a direct invocation.
type Echo struct {
	Payload      json.RawMessage `json:"payload"`
	Tag          string          `json:"tag"`
	RemainingMS  int64           `json:"remaining_ms"`
	HasDeadline  bool            `json:"has_deadline"`
	RequestID    string          `json:"request_id"`
	FunctionARN  string          `json:"function_arn"`
	FunctionName string          `json:"function_name"`
	PID          int             `json:"pid"`
}

// HTTPEcho is the body of the response to an API Gateway event.
type HTTPEcho struct {
	RouteKey string            `json:"route_key"`
	RawPath  string            `json:"raw_path"`
	Body     string            `json:"body"`
	Claims   map[string]string `json:"claims"`
	Scopes   []string          `json:"scopes"`
	Tag      string            `json:"tag"`
	Event    json.RawMessage   `json:"event"`
}

func handle(ctx context.Context, raw json.RawMessage) (any, error) {
	var c control
	_ = json.Unmarshal(raw, &c)

	if c.RouteKey != "" {
		return handleHTTP(raw)
	}
	if c.SleepMS > 0 {
		select {
		case <-time.After(time.Duration(c.SleepMS) * time.Millisecond):
		case <-ctx.Done():
		}
	}
	if c.Fail != "" {
		return nil, errors.New(c.Fail)
	}
	if c.Panic != "" {
		panic(c.Panic)
	}

	out := Echo{
		Payload:      raw,
		Tag:          os.Getenv("ECHO_TAG"),
		FunctionName: lambdacontext.FunctionName,
		PID:          os.Getpid(),
	}
	if dl, ok := ctx.Deadline(); ok {
		out.HasDeadline = true
		out.RemainingMS = time.Until(dl).Milliseconds()
	}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		out.RequestID = lc.AwsRequestID
		out.FunctionARN = lc.InvokedFunctionArn
	}
	return out, nil
}

func handleHTTP(raw json.RawMessage) (any, error) {
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, err
	}
	for k, v := range ev.Headers {
		if strings.EqualFold(k, "x-echo-fail") {
			return nil, errors.New(v)
		}
	}
	out := HTTPEcho{
		RouteKey: ev.RouteKey,
		RawPath:  ev.RawPath,
		Body:     ev.Body,
		Tag:      os.Getenv("ECHO_TAG"),
		Event:    raw,
	}
	if a := ev.RequestContext.Authorizer; a != nil && a.JWT != nil {
		out.Claims = a.JWT.Claims
		out.Scopes = a.JWT.Scopes
	}
	body, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return events.APIGatewayV2HTTPResponse{
		StatusCode: 200,
		Headers:    map[string]string{"Content-Type": "application/json", "X-Echo": "1"},
		Body:       string(body),
	}, nil
}

func main() {
	lambda.Start(handle)
}
