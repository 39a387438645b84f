package claims

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The broker's items live in the session table, in a key space of their
// own: pk = "claims#" + namespace + "#" + instance, sk = -3 (facts are
// sk >= 1, the head 0, receipts -1, tombstones -2; see package dynamo).
// One item per space holds its grants and waiters, with a version every
// write checks. Session ids cannot hold "#", so no session's pk is one of
// these.
const (
	spacePrefix = "claims#"
	spaceSK     = "-3"
	attrPK      = "pk"
	attrSK      = "sk"
	attrVersion = "v"
	attrSpace   = "space"
)

// Defaults.
const (
	// DefaultWaiterTTL is how long a waiter keeps its place without asking
	// again: a blocked turn asks at least every Poll, so a waiter whose
	// turn ended otherwise (cancelled) blocks no one for longer than this.
	DefaultWaiterTTL = 2 * time.Minute
	// DefaultPoll is how long a blocked turn sleeps before it asks again
	// even without a release's wake.
	DefaultPoll = 30 * time.Second
	// maxRaces bounds the tries of one broker call that keeps losing the
	// version check to other writers.
	maxRaces = 200
)

// ErrRaced is matched when a broker call lost the version check maxRaces
// times in a row.
var ErrRaced = errors.New("claims: too many concurrent writers; try again")

// Fate is what becomes of a grant past its authorization deadline.
type Fate int

// Fates.
const (
	// Keep: its execution may be running or may have ended without the
	// release being recorded yet; it stays held.
	Keep Fate = iota
	// Release: its execution never started; it is released.
	Release
	// Quarantine: its execution started and its invocation is gone; it
	// keeps its claims until an operator's verdict.
	Quarantine
)

// Broker admits requests for claims against the grants held, in DynamoDB.
// Its fields are set once; it is safe for concurrent use.
type Broker struct {
	client *dynamodb.Client
	table  string
	opts   []func(*dynamodb.Options)
	// Capacity is the weighted capacity of a namespace (per instance);
	// a namespace not named has none.
	Capacity map[string]int
	// WaiterTTL: see DefaultWaiterTTL. Poll: see DefaultPoll.
	WaiterTTL time.Duration
	Poll      time.Duration
	// Clock is the time source; nil is time.Now.
	Clock func() time.Time
	// Fate decides a blocking grant past its deadline; nil keeps it.
	Fate func(ctx context.Context, g Grant) (Fate, error)
}

// New returns a broker on table (the session table). opts apply to each
// request (a test's request counter, for example).
func New(client *dynamodb.Client, table string, opts ...func(*dynamodb.Options)) *Broker {
	return &Broker{client: client, table: table, opts: opts}
}

func (b *Broker) now() time.Time {
	if b.Clock != nil {
		return b.Clock()
	}
	return time.Now()
}

// PollEvery is how long a blocked turn waits before asking again.
func (b *Broker) PollEvery() time.Duration {
	if b.Poll > 0 {
		return b.Poll
	}
	return DefaultPoll
}

func (b *Broker) waiterTTL() time.Duration {
	if b.WaiterTTL > 0 {
		return b.WaiterTTL
	}
	return DefaultWaiterTTL
}

// Acquire asks for req's claims. Granted: the grant (a request whose ID is
// already granted gets its grant again, out of quarantine and with the new
// deadline). Blocked or over capacity: req waits in the queue of each space
// its claims touch, keeping its first place when it asks again. Invalid
// claims (ErrInvalid) and claims heavier than their capacity (ErrTooHeavy)
// are refused, and nothing is written.
func (b *Broker) Acquire(ctx context.Context, req Request) (Admission, error) {
	if len(req.Claims) == 0 {
		return Admission{}, fmt.Errorf("%w: no claims", ErrInvalid)
	}
	if err := CheckAll(req.Claims); err != nil {
		return Admission{}, err
	}
	asked := map[string]bool{} // grants whose fate was asked
	for try := 0; try < maxRaces; try++ {
		spaces, err := b.read(ctx, req.Claims)
		if err != nil {
			return Admission{}, err
		}
		adm, err := b.decide(spaces, req, b.now())
		if err != nil {
			return Admission{}, err
		}
		if adm.Outcome != Granted {
			settled, err := b.settleStale(ctx, adm.Blockers, asked)
			if err != nil {
				return Admission{}, err
			}
			if settled {
				continue
			}
		}
		err = b.write(ctx, spaces)
		if errors.Is(err, errVersion) {
			backoff(ctx, try)
			continue
		}
		if err != nil {
			return Admission{}, err
		}
		return adm, nil
	}
	return Admission{}, ErrRaced
}

// decide judges req in every space and changes them to match: the grant
// recorded, or the waiter queued.
func (b *Broker) decide(spaces []*space, req Request, now time.Time) (Admission, error) {
	out := Admission{Outcome: Granted}
	var held *Grant
	for _, s := range spaces {
		s.expireWaiters(now.Add(-b.waiterTTL()))
		adm, err := s.judge(req, b.Capacity[s.Namespace])
		if err != nil {
			return Admission{}, err
		}
		switch {
		case adm.Outcome == Blocked || (adm.Outcome == OverCapacity && out.Outcome == Granted):
			out.Outcome = adm.Outcome
		case adm.Outcome == Granted && adm.Grant.ID != "":
			held = &adm.Grant
		}
		for _, g := range adm.Blockers {
			if !slices.ContainsFunc(out.Blockers, func(x Grant) bool { return x.ID == g.ID }) {
				out.Blockers = append(out.Blockers, g)
			}
		}
		out.Ahead += adm.Ahead
	}
	if out.Outcome != Granted {
		for _, s := range spaces {
			s.wait(req, now)
		}
		return out, nil
	}
	g := Grant{ID: req.ID, Granted: now}
	if held != nil {
		g = *held
	}
	g.Session, g.Turn, g.ToolCall, g.Claims, g.Deadline, g.Quarantined = req.Session, req.Turn, req.ToolCall, slices.Clone(req.Claims), req.Deadline, false
	for _, s := range spaces {
		s.grant(g)
	}
	return Admission{Outcome: Granted, Grant: g}, nil
}

// settleStale asks Fate about the blockers past their deadline, once each
// per Acquire, and releases or quarantines them; it reports whether it
// changed any, so the caller judges again. A quarantined grant is asked
// too: an operator may have released it (its holder's facts say so).
func (b *Broker) settleStale(ctx context.Context, blockers []Grant, asked map[string]bool) (bool, error) {
	if b.Fate == nil {
		return false, nil
	}
	now, changed := b.now(), false
	for _, g := range blockers {
		if g.Deadline.IsZero() || !now.After(g.Deadline) || asked[g.ID] {
			continue
		}
		asked[g.ID] = true
		fate, err := b.Fate(ctx, g)
		if err != nil {
			return false, fmt.Errorf("claims: fate of grant %s: %w", g.ID, err)
		}
		switch fate {
		case Release:
			_, err = b.Release(ctx, g)
		case Quarantine:
			if g.Quarantined {
				continue
			}
			err = b.Quarantine(ctx, g)
		default:
			continue
		}
		if err != nil {
			return false, err
		}
		changed = true
	}
	return changed, nil
}

// Admissible reports whether req would be granted now, writing nothing: a
// blocked caller asks it once its suspension is durable, since a release
// between its Acquire and then found it still running and its wake did
// nothing.
func (b *Broker) Admissible(ctx context.Context, req Request) (bool, error) {
	spaces, err := b.read(ctx, req.Claims)
	if err != nil {
		return false, err
	}
	adm, err := b.decide(spaces, req, b.now())
	return err == nil && adm.Outcome == Granted, err
}

// Release frees grant g (its ID and claims) and returns the waiters that
// nothing blocks any more, first come first, for the caller to wake.
// Releasing a grant no longer held changes nothing.
func (b *Broker) Release(ctx context.Context, g Grant) ([]Waiter, error) {
	for try := 0; try < maxRaces; try++ {
		spaces, err := b.read(ctx, g.Claims)
		if err != nil {
			return nil, err
		}
		cutoff := b.now().Add(-b.waiterTTL())
		var ready []Waiter
		changed := false
		for _, s := range spaces {
			changed = s.dropGrant(g.ID) || changed
			changed = s.expireWaiters(cutoff) || changed
			for _, w := range s.ready(b.Capacity[s.Namespace]) {
				if !slices.ContainsFunc(ready, func(x Waiter) bool { return x.ID == w.ID }) {
					ready = append(ready, w)
				}
			}
		}
		if !changed {
			return ready, nil
		}
		err = b.write(ctx, spaces)
		if errors.Is(err, errVersion) {
			backoff(ctx, try)
			continue
		}
		if err != nil {
			return nil, err
		}
		return ready, nil
	}
	return nil, ErrRaced
}

// Quarantine marks grant g quarantined: it keeps its claims, and no
// deadline frees it. A grant no longer held is left alone.
func (b *Broker) Quarantine(ctx context.Context, g Grant) error {
	for try := 0; try < maxRaces; try++ {
		spaces, err := b.read(ctx, g.Claims)
		if err != nil {
			return err
		}
		changed := false
		for _, s := range spaces {
			for i := range s.Grants {
				if s.Grants[i].ID == g.ID && !s.Grants[i].Quarantined {
					s.Grants[i].Quarantined, changed = true, true
				}
			}
		}
		if !changed {
			return nil
		}
		err = b.write(ctx, spaces)
		if errors.Is(err, errVersion) {
			backoff(ctx, try)
			continue
		}
		return err
	}
	return ErrRaced
}

// Grants lists the grants held in the space of (namespace, instance).
func (b *Broker) Grants(ctx context.Context, namespace, instance string) ([]Grant, []Waiter, error) {
	spaces, err := b.read(ctx, []Claim{{Namespace: namespace, Instance: instance}})
	if err != nil {
		return nil, nil, err
	}
	return spaces[0].Grants, spaces[0].Waiters, nil
}

// errVersion: another writer changed a space since it was read.
var errVersion = errors.New("claims: a space changed since it was read")

func backoff(ctx context.Context, try int) {
	d := time.Duration(1+rand.IntN(5+min(try, 20)*5)) * time.Millisecond
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func spacePK(k spaceKey) string { return spacePrefix + k.ns + "#" + k.instance }

// read loads the spaces cs touch, in a stable order, with consistent reads.
func (b *Broker) read(ctx context.Context, cs []Claim) ([]*space, error) {
	var keys []spaceKey
	for _, c := range cs {
		if k := keyOf(c); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b spaceKey) int {
		if a.ns != b.ns {
			return cmpStr(a.ns, b.ns)
		}
		return cmpStr(a.instance, b.instance)
	})
	out := make([]*space, 0, len(keys))
	for _, k := range keys {
		res, err := b.client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(b.table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{
				attrPK: &types.AttributeValueMemberS{Value: spacePK(k)},
				attrSK: &types.AttributeValueMemberN{Value: spaceSK},
			},
		}, b.opts...)
		if err != nil {
			return nil, fmt.Errorf("claims: read %s: %w", spacePK(k), err)
		}
		s := &space{Namespace: k.ns, Instance: k.instance}
		if res.Item != nil {
			if err := decodeSpace(res.Item, s); err != nil {
				return nil, fmt.Errorf("claims: read %s: %w", spacePK(k), err)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func decodeSpace(item map[string]types.AttributeValue, s *space) error {
	v, ok1 := item[attrVersion].(*types.AttributeValueMemberN)
	body, ok2 := item[attrSpace].(*types.AttributeValueMemberS)
	if !ok1 || !ok2 {
		return errors.New("malformed space item")
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(body.Value), s); err != nil {
		return err
	}
	s.version = n
	return nil
}

// put is the conditional write of s at its next version.
func (b *Broker) put(s *space) (*types.Put, error) {
	body, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	p := &types.Put{
		TableName: aws.String(b.table),
		Item: map[string]types.AttributeValue{
			attrPK:      &types.AttributeValueMemberS{Value: spacePK(spaceKey{s.Namespace, s.Instance})},
			attrSK:      &types.AttributeValueMemberN{Value: spaceSK},
			attrVersion: &types.AttributeValueMemberN{Value: strconv.FormatInt(s.version+1, 10)},
			attrSpace:   &types.AttributeValueMemberS{Value: string(body)},
		},
	}
	if s.version == 0 {
		p.ConditionExpression = aws.String("attribute_not_exists(pk)")
	} else {
		p.ConditionExpression = aws.String("v = :v")
		p.ExpressionAttributeValues = map[string]types.AttributeValue{":v": &types.AttributeValueMemberN{Value: strconv.FormatInt(s.version, 10)}}
	}
	return p, nil
}

// write stores the spaces, each only if its version is still the one
// read: one conditional put, or one transaction for several, so a grant
// over several spaces is written whole or not at all.
func (b *Broker) write(ctx context.Context, spaces []*space) error {
	puts := make([]*types.Put, len(spaces))
	for i, s := range spaces {
		p, err := b.put(s)
		if err != nil {
			return err
		}
		puts[i] = p
	}
	if len(puts) == 1 {
		p := puts[0]
		_, err := b.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: p.TableName, Item: p.Item,
			ConditionExpression: p.ConditionExpression, ExpressionAttributeValues: p.ExpressionAttributeValues}, b.opts...)
		return writeErr(err)
	}
	items := make([]types.TransactWriteItem, len(puts))
	for i, p := range puts {
		items[i] = types.TransactWriteItem{Put: p}
	}
	_, err := b.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items}, b.opts...)
	return writeErr(err)
}

func writeErr(err error) error {
	var ccf *types.ConditionalCheckFailedException
	var tce *types.TransactionCanceledException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ccf):
		return errVersion
	case errors.As(err, &tce):
		// A failed condition, or a conflict with another transaction on
		// the same items: either way, read again.
		return errVersion
	}
	return fmt.Errorf("claims: write: %w", err)
}
