// Command echofn is the Lambda function behind package tool's LambdaTool
// tests. It answers the envelope it received, unless the tool input asks
// for something else:
//
//	{"fail": "msg"}   return an error with message msg
//	{"raw": "text"}   answer text as a raw, non-JSON payload
//	{"sleep_ms": N}   sleep N ms (or until the deadline) first
package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
)

type envelope struct {
	Input          json.RawMessage `json:"input"`
	ToolCallID     string          `json:"toolCallId"`
	IdempotencyKey string          `json:"idempotencyKey"`
}

type control struct {
	Fail    string `json:"fail"`
	Raw     string `json:"raw"`
	SleepMS int    `json:"sleep_ms"`
}

func handle(ctx context.Context, env envelope) (any, error) {
	var c control
	_ = json.Unmarshal(env.Input, &c)
	if c.SleepMS > 0 {
		select {
		case <-time.After(time.Duration(c.SleepMS) * time.Millisecond):
		case <-ctx.Done():
		}
	}
	switch {
	case c.Fail != "":
		return nil, errors.New(c.Fail)
	case c.Raw != "":
		return strings.NewReader(c.Raw), nil
	}
	return env, nil
}

func main() {
	lambda.Start(handle)
}
