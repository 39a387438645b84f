package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/baton-run/baton/internal/wake"
)

// Pinned turns: a turn whose agent's policy is pin resumes on the build it
// started on. The resume function's builds are its published versions
// (AWS_LAMBDA_FUNCTION_VERSION); a wake the alias's consumer takes for a
// turn pinned to another version is handed to that version by an
// asynchronous invocation of it (turn.Pins).

// VersionInvoker invokes a published version of a function
// asynchronously; a version that does not exist is turn.ErrBuildGone.
// providers/awslambda's Client is one: a program whose Lambda invoker is
// one (Config.Lambda) hands pinned turns over.
type VersionInvoker interface {
	InvokeVersion(ctx context.Context, function, version string, payload []byte) error
}

// lambdaPins hands a pinned turn to a version of function: the wake, as
// the one record of an SQS event like the event source mapping's, so the
// version's handler takes it as any wake.
type lambdaPins struct {
	inv      VersionInvoker
	function string
	now      func() time.Time
}

// Hand invokes version build of the function with wake w.
func (p lambdaPins) Hand(ctx context.Context, build string, w wake.Wake) error {
	body, err := json.Marshal(w)
	if err != nil {
		return fmt.Errorf("app: hand %s to build %s: %w", w.Session, build, err)
	}
	sent := p.now().UnixMilli()
	ev := events.SQSEvent{Records: []events.SQSMessage{{
		MessageId: fmt.Sprintf("pinned-%s-%d", w.Session, w.Seq), Body: string(body), EventSource: "aws:sqs",
		Attributes: map[string]string{"SentTimestamp": strconv.FormatInt(sent, 10)},
	}}}
	payload, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("app: hand %s to build %s: %w", w.Session, build, err)
	}
	return p.inv.InvokeVersion(ctx, p.function, build, payload)
}
