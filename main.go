package baton

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/baton-run/baton/pkg/app"
)

// Function names one of the three functions template.yaml deploys.
type Function int

// The functions; Main starts the handler of one.
const (
	// OperatorFunction serves the operator API (OperatorHandler).
	OperatorFunction Function = iota + 1
	// ResumeFunction runs turns on SQS wakes (ResumeHandler).
	ResumeFunction
	// TickFunction runs on a schedule (TickHandler).
	TickFunction
)

// String is the function's name: operator, resume or tick.
func (f Function) String() string {
	switch f {
	case OperatorFunction:
		return "operator"
	case ResumeFunction:
		return "resume"
	case TickFunction:
		return "tick"
	}
	return fmt.Sprintf("Function(%d)", int(f))
}

// Handler is f's handler, for lambda.Start; an error for a Function that
// is none of the three.
func (a *App) Handler(f Function) (any, error) {
	switch f {
	case OperatorFunction:
		return a.OperatorHandler(), nil
	case ResumeFunction:
		return a.ResumeHandler(), nil
	case TickFunction:
		return a.TickHandler(), nil
	}
	return nil, fmt.Errorf("baton: %v is not a function", f)
}

// Main is a function's whole main: it builds the App of c from the
// environment, as New does, and starts f's handler with lambda.Start,
// which does not return. If the App cannot be built, it logs why (in
// LOG_FORMAT, to stderr) and exits with status 1.
//
//	func main() { baton.Main(baton.ResumeFunction, baton.Config{Agents: agents}) }
func Main(f Function, c Config) {
	a, err := New(context.Background(), c)
	var h any
	if err == nil {
		h, err = a.Handler(f)
	}
	if err != nil {
		app.LoggerFromOS().Error(f.String()+": start", "err", err)
		os.Exit(1)
	}
	lambda.Start(h)
}
