package dynamo

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/baton-run/baton/pkg/reducer"
)

// fuzzLog is a real session's facts, each as the JSON stored in its item:
// created, a message, a turn that suspends for approval, is answered,
// resumes, executes a tool and completes.
func fuzzLog() []string {
	t := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	op := reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"}
	ag := reducer.Actor{Kind: reducer.ActorAgent, ID: "turn_1"}
	return encodeLog(t, []reducer.Fact{
		{Type: reducer.SessionCreated, Actor: op, Agent: "helper", Owner: "alice"},
		{Type: reducer.MessageReceived, Actor: op, Message: &reducer.Message{ID: "msg_1", Text: "deploy it"}},
		{Type: reducer.TurnStarted, Actor: ag, Turn: "turn_1", Stream: "turn_1", Lease: t.Add(15 * time.Minute)},
		{Type: reducer.ApprovalRequested, Actor: ag, Turn: "turn_1", Approval: &reducer.Approval{
			ID: "ap_1", ToolCallID: "call_1", Tool: "deploy", Input: json.RawMessage(`{"env":"prod"}`), Expires: t.Add(time.Hour)}},
		{Type: reducer.TurnSuspended, Actor: ag, Turn: "turn_1", Cause: reducer.CauseApproval},
		{Type: reducer.ApprovalAnswered, Actor: op, Turn: "turn_1", Answer: &reducer.Answer{
			ApprovalID: "ap_1", ToolCallID: "call_1", Decision: reducer.Approve}, Reason: "ok"},
		{Type: reducer.TurnResumed, Actor: ag, Turn: "turn_1", Lease: t.Add(30 * time.Minute)},
		{Type: reducer.ExecutionStarted, Actor: ag, Turn: "turn_1", Execution: &reducer.Execution{ID: "ex_1", ToolCallID: "call_1", Tool: "deploy"}},
		{Type: reducer.TurnCompleted, Actor: ag, Turn: "turn_1", Usage: &reducer.Usage{InputTokens: 10, OutputTokens: 5}, Snapshot: "snapshots/s_1/000000000009-00.json"},
	})
}

// fuzzLog2 is another real session: a turn suspended for its budget and
// resumed, an uncertain execution settled by an operator, a failure, and a
// cancelled turn with a message waiting.
func fuzzLog2() []string {
	t := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
	op := reducer.Actor{Kind: reducer.ActorOperator, ID: "bob"}
	ag := reducer.Actor{Kind: reducer.ActorAgent, ID: "turn_a"}
	ex := &reducer.Execution{ID: "ex_a", ToolCallID: "call_a", Tool: "charge"}
	return encodeLog(t, []reducer.Fact{
		{Type: reducer.SessionCreated, Actor: op, Agent: "ops", Owner: "bob"},
		{Type: reducer.MessageReceived, Actor: op, Message: &reducer.Message{ID: "msg_a", Text: "charge it"}},
		{Type: reducer.TurnStarted, Actor: ag, Turn: "turn_a", Stream: "turn_a", Lease: t.Add(time.Minute)},
		{Type: reducer.TurnSuspended, Actor: ag, Turn: "turn_a", Cause: reducer.CauseBudget},
		{Type: reducer.TurnResumed, Actor: ag, Turn: "turn_a", Lease: t.Add(20 * time.Minute)},
		{Type: reducer.ExecutionStarted, Actor: ag, Turn: "turn_a", Execution: ex},
		{Type: reducer.TurnSuspended, Actor: ag, Turn: "turn_a", Cause: reducer.CauseUncertain, Execution: ex},
		{Type: reducer.ExecutionVerdict, Actor: op, Turn: "turn_a", Settled: &reducer.Settled{ExecutionID: "ex_a", Verdict: reducer.Abandon}},
		{Type: reducer.TurnResumed, Actor: ag, Turn: "turn_a", Lease: t.Add(40 * time.Minute)},
		{Type: reducer.TurnFailed, Actor: ag, Turn: "turn_a", Failure: &reducer.Failure{Kind: "model", Error: "overloaded"}},
		{Type: reducer.MessageReceived, Actor: op, Message: &reducer.Message{ID: "msg_b", Text: "again"}},
		{Type: reducer.TurnStarted, Actor: ag, Turn: "turn_b", Stream: "turn_b", Lease: t.Add(time.Hour)},
		{Type: reducer.MessageReceived, Actor: op, Message: &reducer.Message{ID: "msg_c", Text: "and this"}},
		{Type: reducer.TurnSuspended, Actor: ag, Turn: "turn_b", Cause: reducer.CauseThrottled},
		{Type: reducer.TurnCancelled, Actor: op, Turn: "turn_b", Reason: "enough"},
	})
}

// encodeLog numbers and times facts from t and encodes each.
func encodeLog(t time.Time, facts []reducer.Fact) []string {
	out := make([]string, len(facts))
	for i := range facts {
		facts[i].Seq = int64(i + 1)
		facts[i].Time = t.Add(time.Duration(i) * time.Second)
		b, err := json.Marshal(facts[i])
		if err != nil {
			panic(err)
		}
		out[i] = string(b)
	}
	return out
}

// FuzzFactLog decodes a fuzzed log of fact items (one fact's JSON per line,
// at seqs 1, 2, …) as Facts does, and folds it. Each item decodes or is
// refused with an error; a log that decodes is accepted by the reducer or
// refused with reducer.ErrIllegal, never anything else; and the state it
// reduces to gives a head item that decodes back to the same head.
func FuzzFactLog(f *testing.F) {
	log := fuzzLog()
	for _, l := range [][]string{log, fuzzLog2()} {
		for n := 1; n <= len(l); n++ {
			f.Add(strings.Join(l[:n], "\n"))
		}
	}
	f.Add(strings.Join(log[:3], "\n") + "\n" + strings.Replace(log[3], `"seq":4`, `"seq":5`, 1))
	f.Add(log[0] + "\n" + `{"seq":2,"type":"turn.started","actor":{"kind":"agent"},"turn":"t","stream":"t"}`)
	f.Add(`{"seq":1,"type":"session.created","actor":{"kind":"operator"},"agent":"a","time":"9999-12-31T23:59:59.999999999Z"}`)
	f.Add(`{"seq":1,"type":"session.created","actor":{},"agent":"a"}`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, lines string) {
		var facts []reducer.Fact
		for i, line := range strings.Split(lines, "\n") {
			item := map[string]types.AttributeValue{
				attrPK: str("s_fuzz"), attrSK: num(int64(i + 1)),
				attrType: str("x"), attrFact: str(line),
			}
			fact, err := decodeFact(item)
			if err != nil {
				if err.Error() == "" {
					t.Fatal("an empty error")
				}
				return
			}
			if fact.Seq != int64(i+1) {
				t.Fatalf("item %d decoded to fact seq %d", i+1, fact.Seq)
			}
			facts = append(facts, fact)
		}
		st, err := reducer.Reduce(facts)
		if err != nil {
			if !errors.Is(err, reducer.ErrIllegal) {
				t.Fatalf("Reduce: %v, want an error matching reducer.ErrIllegal", err)
			}
			return
		}
		n := st.Next(st.Updated, 0)
		due, ok := n.Due, !n.Due.IsZero()
		why := reducer.NoReason
		if ok {
			why = n.Reason
		}
		h, err := decodeHead(headItem("s_fuzz", st))
		if err != nil {
			t.Fatalf("the head of a legal state does not decode: %v\nstate %+v", err, st)
		}
		want := Head{Session: "s_fuzz", Agent: st.Agent, Owner: st.Owner, Status: st.Status, LastSeq: st.LastSeq,
			Created: st.Created.UTC().Truncate(0), Updated: st.Updated.UTC().Truncate(0), Why: why, Usage: st.Usage}
		if st.Turn != nil {
			want.Turn, want.Cause = st.Turn.ID, st.Turn.Cause
		}
		if ok {
			want.Due = time.UnixMilli(due.UnixMilli()).UTC()
		}
		if !h.Created.Equal(want.Created) || !h.Updated.Equal(want.Updated) {
			t.Fatalf("head times %v %v, want %v %v", h.Created, h.Updated, want.Created, want.Updated)
		}
		h.Created, h.Updated, want.Created, want.Updated = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if h != want {
			t.Fatalf("head\n got %+v\nwant %+v", h, want)
		}
	})
}

// FuzzDecodeFact decodes one fuzzed fact item: its sort key (a number
// attribute's text) and its fact attribute. It decodes to a fact of that
// seq, or is refused with an error.
func FuzzDecodeFact(f *testing.F) {
	for i, l := range fuzzLog() {
		f.Add(strconv.Itoa(i+1), l)
	}
	f.Add("1e3", `{"seq":1000}`)
	f.Add("-1", `{"seq":-1}`)
	f.Add("99999999999999999999", `{}`)
	f.Fuzz(func(t *testing.T, sk, body string) {
		item := map[string]types.AttributeValue{
			attrPK: str("s_fuzz"), attrSK: &types.AttributeValueMemberN{Value: sk}, attrFact: str(body),
		}
		fact, err := decodeFact(item)
		if err != nil {
			return
		}
		if n, err := strconv.ParseInt(sk, 10, 64); err != nil || fact.Seq != n {
			t.Fatalf("item with sk %q decoded to fact seq %d", sk, fact.Seq)
		}
	})
}

// FuzzDecodeHead decodes a fuzzed head item, given in DynamoDB's JSON
// (`{"pk":{"S":"s_1"},"lastSeq":{"N":"3"}}`). It is refused with an error
// matching ErrCorruptHead or another clear one, or decodes to a consistent
// head: one headItem writes for some state, which encodes back to the same
// attributes.
func FuzzDecodeHead(f *testing.F) {
	for _, facts := range [][]string{fuzzLog(), fuzzLog2()} {
		for n := 1; n <= len(facts); n++ {
			var log []reducer.Fact
			for _, l := range facts[:n] {
				var fact reducer.Fact
				if err := json.Unmarshal([]byte(l), &fact); err != nil {
					f.Fatal(err)
				}
				log = append(log, fact)
			}
			st, err := reducer.Reduce(log)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(itemJSON(headItem("s_1", st)))
		}
	}
	f.Add(`{"pk":{"S":"s_1"},"sk":{"N":"0"},"lastSeq":{"N":"3"},"status":{"S":"running"},"agent":{"S":"a"},"created":{"S":"2026-03-01T12:00:00.000000000Z"},"updated":{"S":"2026-03-01T12:00:00.000000000Z"}}`)
	f.Add(`{"pk":{"S":"s_1"},"sk":{"N":"0"},"lastSeq":{"N":"3"},"status":{"S":"idle"},"agent":{"S":"a"},"created":{"S":"2026-03-01T12:00:00.000000000Z"},"updated":{"S":"2026-03-01T12:00:00.000000000Z"},"turn":{"N":"7"}}`)
	f.Add(`{"pk":{"S":"s_1"},"lastSeq":{"N":"x"}}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, raw string) {
		item, err := parseItemJSON(raw)
		if err != nil {
			return
		}
		h, err := decodeHead(item)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "head of ") {
				t.Fatalf("unclear error %q", err)
			}
			return
		}
		// A consistent head is one headItem writes: rebuild a state with
		// the head's fields and compare the attributes it would write.
		st := reducer.State{Agent: h.Agent, Owner: h.Owner, Status: h.Status, LastSeq: h.LastSeq, Created: h.Created, Updated: h.Updated, Usage: h.Usage}
		if h.Turn != "" {
			st.Turn = &reducer.Turn{ID: h.Turn, Cause: h.Cause}
		}
		// Why must be what State.Next could say of the head's status.
		if wantWhy := map[reducer.Status]map[reducer.Reason]bool{
			reducer.Idle:      {reducer.NoReason: true, reducer.ReasonInbox: true},
			reducer.Running:   {reducer.ReasonLease: true},
			reducer.Suspended: {reducer.NoReason: true, reducer.ReasonWake: true, reducer.ReasonFault: true, reducer.ReasonApproval: h.Cause == reducer.CauseApproval},
		}[h.Status]; !wantWhy[h.Why] {
			t.Fatalf("head %+v: status %s cannot be due for %q", h, h.Status, h.Why)
		}
		back := headItem(h.Session, st)
		for _, name := range []string{attrDueShard, attrDue, attrWhy} {
			delete(back, name) // due follows from facts the head does not keep
		}
		if h.Why != "" {
			back[attrDueShard], back[attrDue], back[attrWhy] = item[attrDueShard], num(h.Due.UnixMilli()), str(string(h.Why))
		}
		for _, name := range []string{attrCreated, attrUpdated} {
			back[name] = item[name] // any RFC 3339 spelling of the same time
		}
		if got, want := itemJSON(back), itemJSON(canonicalNumbers(item)); got != want {
			t.Fatalf("head %+v re-encodes as\n%s\nnot\n%s", h, got, want)
		}
	})
}

// canonicalNumbers returns item with its numbers spelled as DynamoDB
// returns them ("7", not "007" or "+7"); decodeHead reads either alike.
func canonicalNumbers(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	out := map[string]types.AttributeValue{}
	for k, v := range item {
		if n, ok := v.(*types.AttributeValueMemberN); ok {
			if i, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
				v = num(i)
			}
		}
		out[k] = v
	}
	return out
}

// itemJSON renders an item in DynamoDB's JSON, keys sorted.
func itemJSON(item map[string]types.AttributeValue) string {
	names := make([]string, 0, len(item))
	for k := range item {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		kj, _ := json.Marshal(k)
		b.Write(kj)
		b.WriteByte(':')
		switch v := item[k].(type) {
		case *types.AttributeValueMemberS:
			vj, _ := json.Marshal(v.Value)
			fmt.Fprintf(&b, `{"S":%s}`, vj)
		case *types.AttributeValueMemberN:
			vj, _ := json.Marshal(v.Value)
			fmt.Fprintf(&b, `{"N":%s}`, vj)
		case *types.AttributeValueMemberB:
			fmt.Fprintf(&b, `{"B":%q}`, base64.StdEncoding.EncodeToString(v.Value))
		case *types.AttributeValueMemberBOOL:
			fmt.Fprintf(&b, `{"BOOL":%t}`, v.Value)
		case *types.AttributeValueMemberNULL:
			b.WriteString(`{"NULL":true}`)
		default:
			fmt.Fprintf(&b, `{"?":%q}`, fmt.Sprintf("%T", v))
		}
	}
	b.WriteByte('}')
	return b.String()
}

// parseItemJSON reads an item in DynamoDB's JSON, for the scalar types.
func parseItemJSON(raw string) (map[string]types.AttributeValue, error) {
	var m map[string]map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, err
	}
	item := make(map[string]types.AttributeValue, len(m))
	for name, tv := range m {
		if len(tv) != 1 {
			return nil, errors.New("one type per attribute")
		}
		for typ, v := range tv {
			var s string
			var bv bool
			var err error
			switch typ {
			case "S", "N", "B":
				err = json.Unmarshal(v, &s)
			case "BOOL", "NULL":
				err = json.Unmarshal(v, &bv)
			default:
				return nil, fmt.Errorf("type %s", typ)
			}
			if err != nil {
				return nil, err
			}
			switch typ {
			case "S":
				item[name] = &types.AttributeValueMemberS{Value: s}
			case "N":
				item[name] = &types.AttributeValueMemberN{Value: s}
			case "B":
				b, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					return nil, err
				}
				item[name] = &types.AttributeValueMemberB{Value: b}
			case "BOOL":
				item[name] = &types.AttributeValueMemberBOOL{Value: bv}
			case "NULL":
				item[name] = &types.AttributeValueMemberNULL{Value: bv}
			}
		}
	}
	return item, nil
}

// FuzzDecodeCursor decodes fuzzed listing cursors (the cursor= of GET
// /sessions; other is another owner's listing, as the tick's Due pages by
// due time, not by cursor). A cursor is refused with
// ErrBadCursor, or gives a start key of exactly the listing's attributes,
// with their types and fixed values, that encodes back to a cursor
// decoding to the same key.
func FuzzDecodeCursor(f *testing.F) {
	owner := ownerCursor("alice")
	for _, key := range []map[string]types.AttributeValue{
		{attrPK: str("s_1"), attrSK: num(0), attrOwner: str("alice"), attrCreated: str("2026-03-01T12:00:00.000000000Z")},
		{attrPK: str("s_1"), attrSK: num(0), attrDueShard: str(dueShard), attrDue: num(1767225600000)},
		{attrPK: str("s_1"), attrSK: num(0), attrOwner: str("bob"), attrCreated: str("x")},
	} {
		c, err := encodeCursor(key)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(c, false)
		f.Add(c, true)
	}
	f.Add("eyJwayI6eyJTIjoieCJ9fQ", false)
	f.Add("%%", true)
	f.Add("", false)
	f.Fuzz(func(t *testing.T, cursor string, other bool) {
		kind := owner
		if other {
			kind = ownerCursor("bob")
		}
		key, err := decodeCursor(cursor, kind)
		if err != nil {
			if !errors.Is(err, ErrBadCursor) {
				t.Fatalf("decodeCursor(%q): %v, want ErrBadCursor", cursor, err)
			}
			return
		}
		if len(key) != len(kind.attrs) {
			t.Fatalf("key %s has attributes besides %v", itemJSON(key), kind.attrs)
		}
		for name, typ := range kind.attrs {
			switch v := key[name].(type) {
			case *types.AttributeValueMemberS:
				if typ != 'S' {
					t.Fatalf("%s is a string", name)
				}
				if fixed, ok := kind.fixed[name]; ok && v.Value != fixed {
					t.Fatalf("%s is %q, not %q", name, v.Value, fixed)
				}
			case *types.AttributeValueMemberN:
				if _, err := strconv.ParseInt(v.Value, 10, 64); typ != 'N' || err != nil {
					t.Fatalf("%s is the number %q", name, v.Value)
				}
			default:
				t.Fatalf("%s is %T", name, v)
			}
		}
		again, err := encodeCursor(key)
		if err != nil {
			t.Fatal(err)
		}
		key2, err := decodeCursor(again, kind)
		if err != nil || itemJSON(key2) != itemJSON(key) {
			t.Fatalf("round trip of %s: %v, %v", itemJSON(key), key2, err)
		}
	})
}
