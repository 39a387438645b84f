package operator_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/operator"
	"github.com/baton-run/baton/pkg/reducer"
)

// An agent whose steering policy is reject refuses a message while a turn
// is open with a 409 and a JSON message, and writes nothing; with no turn
// open the message is taken.
func TestMessageRejectedWhileATurnIsOpen(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *operator.Config) {
		c.Sessions.Steering = func(agent string) reducer.Steering {
			if agent == "demo" {
				return reducer.SteerReject
			}
			return ""
		}
	})
	s := e.create("alice")
	e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: "alice", body: `{"text":"first"}`})
	e.startTurn(s.ID)
	before := len(e.facts(s.ID))
	resp := e.must(http.StatusConflict, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: "alice", body: `{"text":"while it runs"}`})
	if msg := resp.errorMessage(t); !strings.Contains(msg, "takes no message while a turn is open") {
		t.Fatalf("refusal %q", msg)
	}
	if n := len(e.facts(s.ID)); n != before {
		t.Fatalf("%d facts after the refusal, want %d: nothing written", n, before)
	}
	// Under an idempotency key too: nothing is written, not even the receipt.
	e.must(http.StatusConflict, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: "alice", body: `{"text":"again"}`,
		header: map[string]string{"Idempotency-Key": "k-reject-1"}})
	if n := len(e.facts(s.ID)); n != before {
		t.Fatalf("%d facts after the keyed refusal, want %d", n, before)
	}
}

// Every message a post records says which policy applied: enqueue when no
// turn is open, the agent's policy when one is.
func TestMessageRecordsItsDelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *operator.Config) {
		c.Sessions.Steering = func(string) reducer.Steering { return reducer.SteerSteer }
	})
	s := e.create("alice")
	e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: "alice", body: `{"text":"first"}`})
	e.startTurn(s.ID)
	e.must(http.StatusAccepted, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: "alice", body: `{"text":"steer me"}`})
	var got []reducer.Steering
	for _, f := range e.facts(s.ID) {
		if f.Type == reducer.MessageReceived && f.Actor.ID == "alice" {
			got = append(got, f.Message.Delivery)
		}
	}
	if len(got) != 2 || got[0] != reducer.SteerEnqueue || got[1] != reducer.SteerSteer {
		t.Fatalf("deliveries %v, want enqueue then steer", got)
	}
	if st := e.state(s.ID); len(st.Turn.Steer) != 1 || st.Turn.Steer[0].Text != "steer me" {
		t.Fatalf("turn steer %+v", st.Turn.Steer)
	}
	// The session view counts it.
	var view api.Session
	e.must(http.StatusOK, req{method: "GET", path: "/sessions/" + s.ID, user: "alice"}).json(t, &view)
	if view.Turn == nil || view.Turn.Steer != 1 || view.Inbox != 0 {
		t.Fatalf("view %+v turn %+v, want one message to steer", view, view.Turn)
	}
}
