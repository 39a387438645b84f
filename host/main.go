package host

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/baton-run/baton/internal/app"
)

// Function names one of the three functions template.yaml deploys. A
// program links only the handler of the Function it names, so the tick
// and the resume function carry none of the operator API's code.
type Function struct{ fn *function }

type function struct {
	name    string
	handler func(*App) any
}

// The functions; Main starts the handler of one.
var (
	// OperatorFunction serves the operator API (OperatorHandler).
	OperatorFunction Function = Function{&operatorFunction}
	// ResumeFunction runs turns on SQS wakes (ResumeHandler).
	ResumeFunction Function = Function{&resumeFunction}
	// TickFunction runs on a schedule (TickHandler).
	TickFunction Function = Function{&tickFunction}
)

var (
	operatorFunction = function{"operator", func(a *App) any { return a.OperatorHandler() }}
	resumeFunction   = function{"resume", func(a *App) any { return a.ResumeHandler() }}
	tickFunction     = function{"tick", func(a *App) any { return a.TickHandler() }}
)

// String is the function's name: operator, resume or tick.
func (f Function) String() string {
	if f.fn == nil {
		return "Function{}"
	}
	return f.fn.name
}

// Handler is f's handler, for lambda.Start; an error for a Function that
// is none of the three.
func (a *App) Handler(f Function) (any, error) {
	if f.fn == nil {
		return nil, fmt.Errorf("host: %v is not a function", f)
	}
	return f.fn.handler(a), nil
}

// Main is a function's whole main: it builds the App of c from the
// environment, as New does, and starts f's handler with lambda.Start,
// which does not return. If the App cannot be built, it logs why (in
// LOG_FORMAT, to stderr) and exits with status 1.
//
//	func main() { host.Main(host.ResumeFunction, host.Config{Agents: agents}) }
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
