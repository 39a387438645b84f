package batontest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/internal/chat"
	"github.com/baton-run/baton/pkg/reducer"
)

// operatorAPI serves the kit's operator API (and chat) and calls it as
// batontest.Owner; it answers the status and the head of the body.
func operatorAPI(t *testing.T, kit *batontest.Kit) func(method, path, body string) (int, string) {
	t.Helper()
	srv := httptest.NewServer(kit.App.Operator(func(r *http.Request) (string, bool) {
		return r.Header.Get("X-Baton-Operator"), r.Header.Get("X-Baton-Operator") != ""
	}, 0, ""))
	t.Cleanup(srv.Close)
	return func(method, path, body string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("X-Baton-Operator", batontest.Owner)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		buf := make([]byte, 8192)
		n, _ := io.ReadAtLeast(resp.Body, buf, 1) // the head of a stream will do
		return resp.StatusCode, string(buf[:n])
	}
}

// childApprovalParts are the data of a session's data-child-approval parts.
func childApprovalParts(s *batontest.Session) []map[string]any {
	var out []map[string]any
	for _, part := range s.Parts() {
		if part.Type == "data-child-approval" {
			var d map[string]any
			_ = json.Unmarshal(part.Data, &d)
			out = append(out, d)
		}
	}
	return out
}

// TestChildGrandchildApprovalReachesTheRoot: in a depth-2 chain (desk →
// fraud → leaf), each approval request of the grandchild is shown to its
// parent and on up to the root: the root's stream shows it
// (data-child-approval naming the child it came through and the session
// that asked), and so does GET /sessions/{root}. Answers given on the root
// (through its chat, and through the operator API) and on the middle
// session are routed down to the grandchild, which records them under its
// own approval ids and checks: a made-up id, and a second answer, are
// refused. Each approved call runs once, the denied one never, and the
// chain completes.
func TestChildGrandchildApprovalReachesTheRoot(t *testing.T) {
	var mu sync.Mutex
	held := map[string]int{}
	hold := baton.Func("hold", "Hold an order.", func(ctx context.Context, in holdIn) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		held[in.Order]++
		return "held " + in.Order, nil
	}, baton.Write(), baton.NeedsApproval(baton.When(func(in holdIn) bool { return in.Order != "" })))
	orders := []string{"B", "C", "D"}
	leaf := playFunc(func(req baton.Request) (string, []baton.ModelCall) {
		n := results(req)
		if n == len(orders) {
			return "leaf done", nil
		}
		in, _ := json.Marshal(holdIn{Order: orders[n]})
		return "", []baton.ModelCall{{ID: fmt.Sprintf("h%d", n), Name: "hold", Input: in}}
	})
	kit := batontest.New(t, host.Config{Agents: []baton.Agent{
		{Name: "desk", Model: asker([2]string{"fraud", "check"}), Children: baton.Children{Agents: []string{"fraud"}}},
		{Name: "fraud", Model: asker([2]string{"leaf", "hold B, C and D"}), Children: baton.Children{Agents: []string{"leaf"}}},
		{Name: "leaf", Model: leaf, Tools: []baton.Tool{hold}},
	}})
	ctx := context.Background()
	chatID := "chat-grandchild"
	rootID := chat.SessionID(batontest.Owner, chatID)
	if _, err := kit.Engine().Sessions.Create(ctx, rootID, batontest.Owner, "desk"); err != nil {
		t.Fatal(err)
	}
	root := kit.Open(rootID)
	root.Post("Check.")
	root.Run() // the root, its child and its grandchild, up to B's request
	mid := root.Children()[0]
	g := mid.Children()[0]
	if st := g.State(); st.Parent == nil || st.Parent.Depth != 2 {
		t.Fatalf("grandchild %+v", st.Parent)
	}
	call := operatorAPI(t, kit)

	// ask runs the root's family (the grandchild to its next request and
	// the chain above it to show it), and checks the root shows it, naming
	// who asked.
	ask := func(order string) batontest.Approval {
		t.Helper()
		root.Run()
		if st := g.State(); st.Status != reducer.Suspended || st.Turn.Cause != reducer.CauseApproval {
			t.Fatalf("grandchild %s (%+v), want suspended for the approval of %s", st.Status, st.Turn, order)
		}
		pend := g.Pending()
		if len(pend) != 1 {
			t.Fatalf("grandchild pending %+v", pend)
		}
		for _, s := range []*batontest.Session{mid, root} {
			if st := s.State(); st.Status != reducer.Suspended || st.Turn.Cause != reducer.CauseChildren {
				t.Fatalf("%s resumed to show the request: %s (%+v)", s.ID, st.Status, st.Turn)
			}
		}
		shown := childApprovalParts(root)
		if i := slices.IndexFunc(shown, func(d map[string]any) bool { return d["id"] == pend[0].ID }); i < 0 ||
			shown[i]["child"] != mid.ID || shown[i]["session"] != g.ID || shown[i]["toolCallId"] != pend[0].ToolCallID {
			t.Fatalf("root's data-child-approval parts %v, want %s's request through %s", shown, g.ID, mid.ID)
		}
		var view struct {
			ChildPending []struct {
				Child, Session, ApprovalID string
			} `json:"childPending"`
		}
		code, body := call("GET", "/sessions/"+rootID, "")
		if err := json.Unmarshal([]byte(body), &view); code != 200 || err != nil || len(view.ChildPending) != 1 ||
			view.ChildPending[0].Child != mid.ID || view.ChildPending[0].Session != g.ID || view.ChildPending[0].ApprovalID != pend[0].ID {
			t.Fatalf("GET /sessions/%s: %d %s", rootID, code, body)
		}
		return pend[0]
	}
	answered := func(a batontest.Approval, d reducer.Decision) {
		t.Helper()
		ans := slices.IndexFunc(g.State().Turn.Answers, func(x reducer.Answer) bool { return x.ApprovalID == a.ID })
		if ans < 0 || g.State().Turn.Answers[ans].Decision != d || len(g.Pending()) != 0 {
			t.Fatalf("grandchild after the answer to %s: answers %+v, pending %+v", a.ID, g.State().Turn.Answers, g.Pending())
		}
	}

	// B: approved in the root's chat, with the grandchild's approval id.
	b := ask("B")
	chatAnswer := func(approval string) (int, string) {
		return call("POST", "/chat", fmt.Sprintf(`{"id":%q,"agent":"desk","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"Check."}]},`+
			`{"id":%q,"role":"assistant","parts":[{"type":"tool-hold","toolCallId":%q,"state":"approval-responded","input":{},"approval":{"id":%q,"approved":true}}]}]}`,
			chatID, root.State().Turn.ID, b.ToolCallID, approval))
	}
	before := len(g.Facts())
	if code, body := chatAnswer("ap_made_up"); code != http.StatusConflict || len(g.Facts()) != before {
		t.Fatalf("a made-up approval id through the root's chat: %d %s", code, body)
	}
	if code, body := chatAnswer(b.ID); code != http.StatusOK {
		t.Fatalf("answer through the root's chat: %d %s", code, body)
	}
	answered(b, reducer.Approve)

	// C: approved through the root's operator API.
	c := ask("C")
	if code, body := call("POST", "/sessions/"+rootID+"/approvals/"+c.ID, `{"decision":"approve"}`); code != http.StatusAccepted {
		t.Fatalf("POST /sessions/%s/approvals/%s: %d %s", rootID, c.ID, code, body)
	}
	answered(c, reducer.Approve)

	// D: denied on the middle session; a second answer, from the root, is
	// refused by the grandchild's reducer and writes nothing.
	d := ask("D")
	if code, body := call("POST", "/sessions/"+mid.ID+"/approvals/"+d.ID, `{"decision":"deny","reason":"not D"}`); code != http.StatusAccepted {
		t.Fatalf("POST /sessions/%s/approvals/%s: %d %s", mid.ID, d.ID, code, body)
	}
	answered(d, reducer.Deny)
	before = len(g.Facts())
	if code, body := call("POST", "/sessions/"+rootID+"/approvals/"+d.ID, `{"decision":"approve"}`); code != http.StatusConflict || len(g.Facts()) != before {
		t.Fatalf("a second answer to %s from the root: %d %s", d.ID, code, body)
	}

	if out := root.Run(); out.Kind != batontest.Completed {
		t.Fatalf("root = %+v", out)
	}
	for name, s := range map[string]*batontest.Session{"grandchild": g, "middle": mid} {
		if st := s.State(); st.Last != reducer.TurnCompleted || !st.Reported {
			t.Fatalf("%s = %s, last %s, reported %v, want completed and reported", name, st.Status, st.Last, st.Reported)
		}
	}
	if held["B"] != 1 || held["C"] != 1 || held["D"] != 0 {
		t.Fatalf("hold ran %v, want B and C once, D never", held)
	}
	if got := string(root.Call("fraud").Output); !strings.Contains(got, "leaf done") {
		t.Fatalf("root's call result %s", got)
	}
}
