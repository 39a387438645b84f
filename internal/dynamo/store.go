package dynamo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/clock"
	"github.com/baton-run/baton/internal/retry"
	"github.com/baton-run/baton/pkg/reducer"
)

// MaxAppend is the most facts one Append writes: a transaction holds at most
// 100 items, and one of them is the head.
const MaxAppend = 99

// tailPage is how many facts Tail reads per request.
const tailPage = 25

// ErrConflict is matched when an append lost the race: a condition on the
// expected last seq (or on a fact not existing yet) failed. Nothing else —
// throttling, transaction conflicts, timeouts, validation — matches it.
var ErrConflict = errors.New("dynamo: lost the race")

// ErrNotFound is matched when a session has no head item.
var ErrNotFound = errors.New("dynamo: session not found")

// Store is the session fact store on one DynamoDB table. It is safe for
// concurrent use.
type Store struct {
	reader
	table string
	now   clock.Clock // decides when a receipt expires
}

// WithClock has the store read the time (when a receipt expires) from c;
// the default is the wall clock.
func WithClock(c clock.Clock) Option {
	return func(s *Store) { s.now = c }
}

// Option configures a Store.
type Option func(*Store)

// Counting counts every DynamoDB request (attempt) of the store's reads and
// appends in c. Off unless set: tests turn it on to assert how many requests
// an operation sends.
func Counting(c *Counter) Option {
	return func(s *Store) { s.count = []func(*dynamodb.Options){c.DynamoDB} }
}

// New returns a store on table. It does not create the table; the SAM
// template (template.yaml) declares it.
func New(client *dynamodb.Client, table string, opts ...Option) *Store {
	s := &Store{reader: reader{client: client}, table: table}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Append writes facts, which must carry consecutive seqs, together with the
// head item derived from next (the state after applying them), in one
// transaction. It succeeds only if the session's last seq is still
// facts[0].Seq-1 (or the session does not exist when facts[0].Seq is 1);
// otherwise it returns an error matching ErrConflict and writes nothing.
// When a request fails without a clear answer (a lost response, a timeout,
// a throttle after the SDK's retries) Append reads the first fact back:
// written by this call is success, by another is ErrConflict, absent after a
// transient error is sent again, a couple of times. Any other error leaves
// the facts either whole or absent, never half-written.
// Append does not run the reducer: next must already be the reduced state.
func (s *Store) Append(ctx context.Context, session string, next reducer.State, facts ...reducer.Fact) error {
	return s.AppendWithReceipt(ctx, session, next, nil, facts...)
}

// AppendWithReceipt is Append that, when rc is not nil, also writes rc in
// the same transaction. If rc's key already holds an unexpired receipt it
// returns an error matching ErrReceiptTaken and writes nothing. With a
// receipt, at most MaxAppend-1 facts fit.
func (s *Store) AppendWithReceipt(ctx context.Context, session string, next reducer.State, rc *Receipt, facts ...reducer.Fact) error {
	if err := CheckAppend(session, next, rc, facts); err != nil {
		return fmt.Errorf("dynamo: append to %q: %w", session, err)
	}
	a := appendTx{session: session, first: facts[0].Seq, last: facts[len(facts)-1].Seq, writer: newWriter(), receipt: rc != nil}
	items, err := s.appendItems(a, next, rc, facts)
	if err != nil {
		return err
	}
	in := &dynamodb.TransactWriteItemsInput{TransactItems: items}
	err = s.transact(ctx, in)
	if err == nil || !resendable(err) || ctx.Err() != nil {
		return wrapAppend(err, a.first, a.last, session)
	}
	return s.resolveAppend(ctx, a, in, err)
}

// appendTx names one append's transaction: the session, its facts' seqs,
// the writer token its fact items carry, and whether a receipt is its last
// item.
type appendTx struct {
	session     string
	first, last int64
	writer      string
	receipt     bool
}

// appendItems is the transaction's items: each fact, the head moving from
// the fact before the first, and rc if not nil.
func (s *Store) appendItems(a appendTx, next reducer.State, rc *Receipt, facts []reducer.Fact) ([]types.TransactWriteItem, error) {
	items := make([]types.TransactWriteItem, 0, len(facts)+3)
	if a.first == 1 {
		items = append(items, s.reuseCheck(a.session))
	}
	for _, f := range facts {
		body, err := json.Marshal(f)
		if err != nil {
			return nil, fmt.Errorf("dynamo: append facts %d..%d of %s: encode fact %d: %w", a.first, a.last, a.session, f.Seq, err)
		}
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(s.table),
			Item: map[string]types.AttributeValue{
				attrPK:     str(a.session),
				attrSK:     num(f.Seq),
				attrType:   str(string(f.Type)),
				attrFact:   str(string(body)),
				attrWriter: str(a.writer),
			},
			ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": attrPK},
		}})
		if rc != nil { // so that deleting the session finds its receipts (Purge)
			items[len(items)-1].Put.Item[attrReceipt] = str(receiptPK(rc.Key))
		}
	}
	head := &types.Put{
		TableName:                aws.String(s.table),
		Item:                     headItem(a.session, next),
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	}
	if a.first > 1 {
		head.ConditionExpression = aws.String("#lastSeq = :prev")
		head.ExpressionAttributeNames = map[string]string{"#lastSeq": attrLastSeq}
		head.ExpressionAttributeValues = map[string]types.AttributeValue{":prev": num(a.first - 1)}
	}
	items = append(items, types.TransactWriteItem{Put: head})
	if rc != nil {
		items = append(items, types.TransactWriteItem{Put: s.receiptPut(rc, s.now.Now())})
	}
	return items, nil
}

// resendable says whether a send's error leaves its outcome open.
func resendable(err error) bool { return conditionFailed(err) || awsenv.Transient(err) }

// resolveAppend decides an append whose send failed with err, which does
// not say the transaction was not applied: its answer may have been lost,
// and the SDK's retry of a write that landed fails its own conditions. The
// fact item at first says what happened; one not applied is sent again, up
// to maxResend times.
func (s *Store) resolveAppend(ctx context.Context, a appendTx, in *dynamodb.TransactWriteItemsInput, err error) error {
	var outcome error // the read-back's verdict, once it has one
	decided := false
	resent := 0
	derr := retry.Do(ctx, retry.Policy{Attempts: maxResend + 1}, func() error {
		mine, found, rerr := s.wrote(ctx, a.session, a.first, a.writer)
		decided = true
		switch {
		case rerr != nil:
			outcome = fmt.Errorf("dynamo: append facts %d..%d of %s: %w (outcome unknown: %w)", a.first, a.last, a.session, err, rerr)
		case found && mine:
			outcome = nil
		case a.first == 1 && checkFailedAt(err, 0):
			outcome = fmt.Errorf("dynamo: create %s: %w", a.session, ErrDeleting)
		case a.receipt && receiptTaken(err, len(in.TransactItems)-1):
			outcome = fmt.Errorf("dynamo: append facts %d..%d of %s: %w: %w", a.first, a.last, a.session, ErrReceiptTaken, err)
		case found || conditionFailed(err):
			outcome = fmt.Errorf("dynamo: append facts %d..%d of %s: %w: %w", a.first, a.last, a.session, ErrConflict, err)
		case resent >= maxResend:
			outcome = wrapAppend(err, a.first, a.last, a.session)
		default:
			decided = false
			resent++
			err = s.transact(ctx, in) // not applied: send it again
			return err
		}
		return outcome
	}, func(err error) bool { return !decided && resendable(err) })
	if decided {
		return outcome
	}
	if ctx.Err() != nil && derr != nil {
		return wrapAppend(err, a.first, a.last, a.session) // the last send's error
	}
	return wrapAppend(derr, a.first, a.last, a.session)
}

func wrapAppend(err error, first, last int64, session string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("dynamo: append facts %d..%d of %s: %w", first, last, session, err)
}

// maxResend bounds how often Append sends a transaction again after a
// transient error and a read showing it was not applied.
const maxResend = 2

// transact sends in. A TransactionConflict means another transaction on the
// same items was in flight and ours was not applied: send it again, so the
// outcome is decided by the conditions (a win, or ErrConflict), not by
// timing; conflictPolicy bounds it.
func (s *Store) transact(ctx context.Context, in *dynamodb.TransactWriteItemsInput) error {
	return retry.Do(ctx, conflictPolicy, func() error {
		_, err := s.client.TransactWriteItems(ctx, in, s.count...)
		return err
	}, transactionConflict)
}

// conflictPolicy is transact's: 5 sends, with full jitter under a cap
// doubling from 20 ms to 160 ms between them (at most 300 ms of waits).
var conflictPolicy = retry.Policy{Attempts: 5, Base: 20 * time.Millisecond, Max: 160 * time.Millisecond}

// wrote reads the fact item at seq consistently and reports whether it
// exists and whether the Append tagged writer wrote it. A transaction is
// applied whole or not at all, so one item tells.
func (s *Store) wrote(ctx context.Context, session string, seq int64, writer string) (mine, found bool, err error) {
	out, err := s.getItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(s.table),
		Key:                      map[string]types.AttributeValue{attrPK: str(session), attrSK: num(seq)},
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#pk, #w"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#w": attrWriter},
	})
	if err != nil {
		return false, false, fmt.Errorf("read fact %d back: %w", seq, err)
	}
	if len(out.Item) == 0 {
		return false, false, nil
	}
	return strAttr(out.Item, attrWriter) == writer, true, nil
}

func newWriter() string {
	var b [12]byte
	// crypto/rand.Read never returns an error (Go 1.24+ crashes instead).
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// CheckAppend is what an append of facts (and rc, when not nil) to a fact
// log must satisfy before it is tried, in any store: a session id, 1 to
// MaxAppend consecutive facts from seq 1 or more (one fewer to create a
// session, or with a receipt), a next state ending at the last of them,
// and a whole receipt.
func CheckAppend(session string, next reducer.State, rc *Receipt, facts []reducer.Fact) error {
	if err := checkFacts(session, next, facts); err != nil {
		return err
	}
	if rc == nil {
		return nil
	}
	if err := checkReceipt(rc); err != nil {
		return err
	}
	if len(facts) >= MaxAppend {
		return fmt.Errorf("%d facts with a receipt, at most %d", len(facts), MaxAppend-1)
	}
	return nil
}

func checkFacts(session string, next reducer.State, facts []reducer.Fact) error {
	switch {
	case session == "":
		return errors.New("no session id")
	case len(facts) == 0:
		return errors.New("no facts")
	case len(facts) > MaxAppend:
		return fmt.Errorf("%d facts, at most %d per append", len(facts), MaxAppend)
	case facts[0].Seq == 1 && len(facts) > MaxAppend-1:
		return fmt.Errorf("%d facts creating a session, at most %d", len(facts), MaxAppend-1)
	case facts[0].Seq < 1:
		return fmt.Errorf("first fact has seq %d, seqs start at 1", facts[0].Seq)
	}
	for i, f := range facts[1:] {
		if f.Seq != facts[i].Seq+1 {
			return fmt.Errorf("fact seq %d does not follow %d", f.Seq, facts[i].Seq)
		}
	}
	last := facts[len(facts)-1].Seq
	if next.LastSeq != last {
		return fmt.Errorf("next state has last seq %d, the last fact is %d", next.LastSeq, last)
	}
	if next.Status == "" {
		return errors.New("next state has no status")
	}
	return nil
}

// transactionConflict reports whether a transaction was refused because
// another one on the same items was in flight.
func transactionConflict(err error) bool {
	var tce *types.TransactionConflictException
	if errors.As(err, &tce) {
		return true
	}
	var cancelled *types.TransactionCanceledException
	if errors.As(err, &cancelled) && !conditionFailed(err) {
		for _, r := range cancelled.CancellationReasons {
			if aws.ToString(r.Code) == "TransactionConflict" {
				return true
			}
		}
	}
	return false
}

// conditionFailed reports whether err says a condition expression failed,
// and only that.
func conditionFailed(err error) bool {
	var cancelled *types.TransactionCanceledException
	if errors.As(err, &cancelled) {
		for _, r := range cancelled.CancellationReasons {
			if aws.ToString(r.Code) == "ConditionalCheckFailed" {
				return true
			}
		}
		return false
	}
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// Facts returns the session's facts with seq > after, in ascending order.
// Reads are strongly consistent. A session without facts yields none.
func (s *Store) Facts(ctx context.Context, session string, after int64) ([]reducer.Fact, error) {
	after = max(after, 0)
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk > :after"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(session), ":after": num(after)},
		ConsistentRead:            aws.Bool(true),
	}
	var facts []reducer.Fact
	for {
		out, err := s.query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("dynamo: read facts after %d of %s: %w", after, session, err)
		}
		for _, item := range out.Items {
			f, err := decodeFact(item)
			if err != nil {
				return nil, fmt.Errorf("dynamo: read facts after %d of %s: %w", after, session, err)
			}
			if want := after + int64(len(facts)) + 1; f.Seq != want {
				return nil, fmt.Errorf("dynamo: read facts after %d of %s: got seq %d, want %d", after, session, f.Seq, want)
			}
			facts = append(facts, f)
		}
		if len(out.LastEvaluatedKey) == 0 {
			return facts, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// Tail reads the session's facts backwards, newest first, until it has read
// the newest fact carrying a snapshot or reached seq 1, and returns what it
// read in ascending order. The number of requests depends on the facts since
// the last snapshot, not on the session's age. A session without facts
// yields none.
func (s *Store) Tail(ctx context.Context, session string) ([]reducer.Fact, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk > :zero"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(session), ":zero": num(0)},
		ConsistentRead:            aws.Bool(true),
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(tailPage),
	}
	var facts []reducer.Fact // newest first
	for {
		out, err := s.query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("dynamo: read tail of %s: %w", session, err)
		}
		for _, item := range out.Items {
			f, err := decodeFact(item)
			if err != nil {
				return nil, fmt.Errorf("dynamo: read tail of %s: %w", session, err)
			}
			if n := len(facts); n > 0 && f.Seq != facts[n-1].Seq-1 {
				return nil, fmt.Errorf("dynamo: read tail of %s: got seq %d after %d", session, f.Seq, facts[n-1].Seq)
			}
			facts = append(facts, f)
			if f.Snapshot != "" || f.Seq == 1 {
				slices.Reverse(facts)
				return facts, nil
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			if len(facts) == 0 {
				return nil, nil
			}
			return nil, fmt.Errorf("dynamo: read tail of %s: facts end at seq %d, not 1", session, facts[len(facts)-1].Seq)
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func decodeFact(item map[string]types.AttributeValue) (reducer.Fact, error) {
	seq, err := numAttr(item, attrSK)
	if err != nil {
		return reducer.Fact{}, err
	}
	body, ok := item[attrFact].(*types.AttributeValueMemberS)
	if !ok {
		return reducer.Fact{}, fmt.Errorf("fact %d: no %s attribute", seq, attrFact)
	}
	var f reducer.Fact
	if err := json.Unmarshal([]byte(body.Value), &f); err != nil {
		return reducer.Fact{}, fmt.Errorf("fact %d: decode: %w", seq, err)
	}
	if f.Seq != seq {
		return reducer.Fact{}, fmt.Errorf("fact item %d holds fact seq %d", seq, f.Seq)
	}
	return f, nil
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func strAttr(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func numAttr(item map[string]types.AttributeValue, name string) (int64, error) {
	v, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("no number attribute %s", name)
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("attribute %s: %w", name, err)
	}
	return n, nil
}
