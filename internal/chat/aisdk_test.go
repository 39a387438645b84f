package chat_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAISDKClients runs the AI SDK's own client code from npm (majors 5, 6
// and 7: AbstractChat with the stock DefaultChatTransport, and
// readUIMessageStream) against the dev server: a message gets a streamed
// answer, an approval (through addToolApprovalResponse, or for major 5 the
// operator route and a reconnect) runs the tool and the answer follows, a
// deny gives the denial, a reconnect mid-turn ends with the whole
// message, stop ends the turn, an answer an output guardrail blocks
// streams live and is retracted (a data-guardrail part; gone after a
// reload), an approval given through the operator
// route reaches a chat that resumes its stream, and no chunk is rejected.
// It also shows a client rejecting a chunk when it is sent another major's
// stream, so the checks can fail. It needs node and npm; without them it skips, unless
// CI is set.
func TestAISDKClients(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is not on PATH; CI must install it (.ci/run does, from Debian)")
		}
		t.Skip("node is not on PATH: install Node.js and npm to run the AI SDK client test")
	}
	dir, err := filepath.Abs("../../test/aisdk")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "ai7")); err != nil {
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	cases := []struct {
		major, header string
		ok            bool
		fails         string // what the log says when not ok
	}{
		{"5", "5", true, ""},
		{"6", "6", true, ""},
		{"7", "7", true, ""},
		{"6", "none", true, ""},
		{"7", "none", true, ""},
		{"6", "7", false, "no chunk rejected failed"},
		{"5", "6", false, "no chunk rejected failed"},
	}
	// The clients run at once (each on its own chat; they mostly wait on
	// the server), and each is then checked in its own subtest.
	type run struct {
		out []byte
		err error
	}
	runs := make([]run, len(cases))
	var wg sync.WaitGroup
	for i, tc := range cases {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(cctx, node, "chat.mjs", tc.major, tc.header)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "BATON_URL="+base)
			runs[i].out, runs[i].err = cmd.CombinedOutput()
		})
	}
	wg.Wait()
	for i, tc := range cases {
		t.Run("ai"+tc.major+"_header_"+tc.header, func(t *testing.T) {
			out, err := runs[i].out, runs[i].err
			switch {
			case tc.ok && err != nil:
				t.Fatalf("ai@%s with header %s: %v\n%s", tc.major, tc.header, err, out)
			case tc.ok && !strings.Contains(string(out), "): ok"):
				t.Fatalf("ai@%s with header %s did not finish:\n%s", tc.major, tc.header, out)
			case !tc.ok && (err == nil || !strings.Contains(string(out), tc.fails)):
				t.Fatalf("ai@%s with header %s should reject a chunk: %v\n%s", tc.major, tc.header, err, out)
			}
			t.Logf("%s", out)
		})
	}
}
