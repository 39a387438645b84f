package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/baton-run/baton/api"
)

// complete is `baton complete`: a tool call waiting for its callback gets
// its result, by the callback's token (TOKEN JSON, or TOKEN --error TEXT:
// the public route POST /callbacks/{token}), or by hand, as the session's
// owner, by the call's id (SESSION CALL JSON, or SESSION CALL --error
// TEXT: POST /sessions/{id}/callbacks/{toolCallId}). The number of
// arguments says which. JSON "-" reads stdin; JSON that is not JSON is a
// usage error before any request. The token is never printed.
func (e *env) complete(ctx context.Context, args []string) error {
	c := e.flags("complete", false)
	var errText, reason string
	c.fs.StringVar(&errText, "error", "", "fail the call: the model gets this text as the call's error")
	c.fs.StringVar(&reason, "reason", "", "why, recorded with a completion by hand (SESSION CALL)")
	const names = "TOKEN JSON, TOKEN --error TEXT, SESSION CALL JSON or SESSION CALL --error TEXT"
	pos, err := c.parse(args, 1, true, names)
	if err != nil {
		return err
	}
	failing := flagSet(c, "error")
	if failing && errText == "" {
		return usagef("--error is empty: give the text the model sees")
	}
	n := len(pos)
	if !failing {
		n-- // the last argument is the JSON
	}
	if n != 1 && n != 2 {
		return usagef("want %s, got %d argument(s)", names, len(pos))
	}
	for i, p := range pos {
		if p == "" {
			return usagef("argument %d of %s is empty", i+1, names)
		}
	}
	byHand := n == 2
	if !byHand && reason != "" {
		return usagef("--reason goes with a completion by hand (SESSION CALL); a token's completion records none")
	}
	in := api.CallbackRequest{Error: errText}
	if !failing {
		if in.Output, err = e.jsonArg(pos[n], "JSON"); err != nil {
			return err
		}
	}
	cl, err := e.client(c)
	if err != nil {
		return err
	}
	status := "completed"
	if failing {
		status = "failed"
	}
	if byHand {
		if _, err := cl.CompleteCall(ctx, pos[0], pos[1], api.CompleteCallRequest{CallbackRequest: in, Reason: reason}); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s tool call %s of session %s by hand\n", status, pos[1], pos[0])
		return nil
	}
	if _, err := cl.Complete(ctx, pos[0], in); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s the call of the callback\n", status)
	return nil
}

// heartbeat is `baton heartbeat TOKEN`: it renews the callback's
// heartbeat timeout and prints its new deadline (RFC 3339, UTC).
func (e *env) heartbeat(ctx context.Context, args []string) error {
	c := e.flags("heartbeat", true)
	pos, err := c.parse(args, 1, false, "TOKEN")
	if err != nil {
		return err
	}
	cl, err := e.client(c)
	if err != nil {
		return err
	}
	out, err := cl.Heartbeat(ctx, pos[0])
	if err != nil {
		return err
	}
	if c.json {
		return e.printJSON(out)
	}
	fmt.Fprintln(e.stdout, out.Deadline.UTC().Format(time.RFC3339Nano))
	return nil
}

// flagSet reports whether flag name was given on c's command line.
func flagSet(c *command, name string) bool {
	set := false
	c.fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// showCallbacks writes what show says of the open turn's calls waiting
// for their callback, with the commands that complete them by hand.
func showCallbacks(w io.Writer, s api.Session) {
	for _, cb := range s.Callbacks {
		beat := ""
		if !cb.Beat.IsZero() {
			beat = ", last heartbeat " + cb.Beat.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "callback %s of %s waits, deadline %s%s\n         baton complete %s %s JSON   |   baton complete %s %s --error TEXT\n",
			cb.ToolCallID, cb.Tool, cb.Deadline.UTC().Format(time.RFC3339), beat, s.ID, cb.ToolCallID, s.ID, cb.ToolCallID)
	}
}
