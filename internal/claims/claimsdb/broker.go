package claimsdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/baton-run/baton/internal/claims"
	"github.com/baton-run/baton/internal/clock"
	"github.com/baton-run/baton/internal/retry"
)

// Broker is the resource claims broker (claims.Broker) on the session
// table: one item per claims space (see schema.go) holds the space's
// grants and waiters as claims.Space JSON, with a version every write
// checks; a change over several spaces is one TransactWriteItems, so it
// is written whole or not at all. Policy decides; Broker reads, asks it,
// and writes back, reading again when another writer won. Its fields are
// set once; it is safe for concurrent use.
type Broker struct {
	client API
	table  string
	opts   []func(*dynamodb.Options)
	// Capacity is the weighted capacity of a namespace (per instance);
	// a namespace not named has none.
	Capacity map[string]int
	// WaiterTTL: see claims.DefaultWaiterTTL. Poll: see claims.DefaultPoll.
	WaiterTTL time.Duration
	Poll      time.Duration
	// Clock is the time source; nil is the wall clock.
	Clock clock.Clock
	// Fate decides a blocking grant past its deadline; nil keeps it.
	Fate func(ctx context.Context, g claims.Grant) (claims.Fate, error)
}

var _ claims.Broker = (*Broker)(nil)

// racePolicy bounds the tries of one broker call that keeps losing the
// version check to other writers; past it the call fails with
// claims.ErrRaced.
var racePolicy = retry.Policy{Attempts: 200, Base: 5 * time.Millisecond, Max: 100 * time.Millisecond}

// raced runs fn under racePolicy, again while it loses the version check
// (errVersion) or asks to (errAgain).
func raced(ctx context.Context, fn func() error) error {
	err := retry.Do(ctx, racePolicy, fn, func(err error) bool { return errors.Is(err, errVersion) || errors.Is(err, errAgain) })
	if errors.Is(err, retry.ErrExhausted) {
		return fmt.Errorf("%w: %w", claims.ErrRaced, err)
	}
	return err
}

// errAgain: the state a call judged changed under it (a stale grant was
// settled); judge again.
var errAgain = errors.New("dynamo: claims changed, judge again")

// API is the part of the DynamoDB API a Broker calls: consistent
// GetItem, and PutItem and TransactWriteItems of puts whose condition is
// attribute_not_exists(pk) or v = :v (the version read). *dynamodb.Client
// is one; internal/memtable's Items is one in memory.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// New returns a claims broker on table (the session table). opts
// apply to each request (a test's request counter, for example).
func New(client API, table string, opts ...func(*dynamodb.Options)) *Broker {
	return &Broker{client: client, table: table, opts: opts}
}

func (b *Broker) now() time.Time { return b.Clock.Now() }

func (b *Broker) policy() claims.Policy {
	return claims.Policy{Capacity: b.Capacity, WaiterTTL: b.WaiterTTL}
}

// PollEvery is how long a blocked turn waits before asking again: Poll, or
// claims.DefaultPoll.
func (b *Broker) PollEvery() time.Duration {
	if b.Poll > 0 {
		return b.Poll
	}
	return claims.DefaultPoll
}

// Acquire: see claims.Broker. A blocking grant past its deadline is asked
// about (Fate) once per call, and released or quarantined as it says; a
// quarantined one is asked too, since an operator may have released it.
func (b *Broker) Acquire(ctx context.Context, req claims.Request) (claims.Admission, error) {
	if err := req.Check(); err != nil {
		return claims.Admission{}, err
	}
	asked := map[string]bool{} // grants whose fate was asked
	var adm claims.Admission
	err := raced(ctx, func() error {
		spaces, err := b.read(ctx, req.Owner, req.Claims)
		if err != nil {
			return err
		}
		adm, err = b.policy().Admit(spaces.all(), req, b.now())
		if err != nil {
			return err
		}
		if adm.Outcome != claims.Granted {
			settled, err := b.settleStale(ctx, adm.Blockers, asked)
			if err != nil {
				return err
			}
			if settled {
				return errAgain
			}
		}
		return b.write(ctx, spaces)
	})
	if err != nil {
		return claims.Admission{}, err
	}
	adm.Blockers = claims.Masked(req.Owner, adm.Blockers)
	return adm, nil
}

// settleStale asks Fate about the blockers past their deadline, once each
// per Acquire, and releases, quarantines or orphans them; it reports
// whether it changed any, so the caller judges again.
func (b *Broker) settleStale(ctx context.Context, blockers []claims.Grant, asked map[string]bool) (bool, error) {
	if b.Fate == nil {
		return false, nil
	}
	changed := false
	for _, g := range claims.Stale(blockers, b.now()) {
		if asked[g.ID] {
			continue
		}
		asked[g.ID] = true
		fate, err := b.Fate(ctx, g)
		if err != nil {
			return false, fmt.Errorf("dynamo: fate of grant %s: %w", g.ID, err)
		}
		switch fate {
		case claims.Release:
			_, err = b.Release(ctx, g)
		case claims.Quarantine:
			if g.Quarantined {
				continue
			}
			err = b.Quarantine(ctx, g)
		case claims.Orphan:
			err = b.Orphan(ctx, g)
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

// Admissible: see claims.Broker.
func (b *Broker) Admissible(ctx context.Context, req claims.Request) (bool, error) {
	spaces, err := b.read(ctx, req.Owner, req.Claims)
	if err != nil {
		return false, err
	}
	adm, err := b.policy().Admit(spaces.all(), req, b.now())
	return err == nil && adm.Outcome == claims.Granted, err
}

// Release: see claims.Broker.
func (b *Broker) Release(ctx context.Context, g claims.Grant) ([]claims.Waiter, error) {
	return b.change(ctx, g.Owner, g.Claims, func(spaces []*claims.Space, now time.Time) ([]claims.Waiter, bool) {
		return b.policy().Free(spaces, g.ID, now)
	})
}

// Withdraw: see claims.Broker.
func (b *Broker) Withdraw(ctx context.Context, req claims.Request) ([]claims.Waiter, error) {
	return b.change(ctx, req.Owner, req.Claims, func(spaces []*claims.Space, now time.Time) ([]claims.Waiter, bool) {
		return b.policy().Withdraw(spaces, req.ID, now)
	})
}

// Quarantine: see claims.Broker.
func (b *Broker) Quarantine(ctx context.Context, g claims.Grant) error {
	_, err := b.change(ctx, g.Owner, g.Claims, func(spaces []*claims.Space, _ time.Time) ([]claims.Waiter, bool) {
		return nil, claims.MarkQuarantined(spaces, g.ID)
	})
	return err
}

// change reads the spaces of cs (asked for by a session of owner), lets f
// change them, and writes them back if it did, reading again when another
// writer won; it returns f's waiters.
func (b *Broker) change(ctx context.Context, owner string, cs []claims.Claim, f func([]*claims.Space, time.Time) ([]claims.Waiter, bool)) ([]claims.Waiter, error) {
	var ready []claims.Waiter
	err := raced(ctx, func() error {
		spaces, err := b.read(ctx, owner, cs)
		if err != nil {
			return err
		}
		var changed bool
		ready, changed = f(spaces.all(), b.now())
		if !changed {
			return nil
		}
		return b.write(ctx, spaces)
	})
	if err != nil {
		return nil, err
	}
	return ready, nil
}

// Grants: see claims.Broker.
func (b *Broker) Grants(ctx context.Context, k claims.SpaceKey) ([]claims.Grant, []claims.Waiter, error) {
	spaces, err := b.readKeys(ctx, []claims.SpaceKey{k})
	if err != nil {
		return nil, nil, err
	}
	return spaces[0].Grants, spaces[0].Waiters, nil
}

// errVersion: another writer changed a space since it was read.
var errVersion = errors.New("dynamo: a claims space changed since it was read")

// storedSpace is a space as read, with the version of its item (0: no
// item yet).
type storedSpace struct {
	*claims.Space
	version int64
}

type storedSpaces []storedSpace

func (ss storedSpaces) all() []*claims.Space {
	out := make([]*claims.Space, len(ss))
	for i, s := range ss {
		out[i] = s.Space
	}
	return out
}

// claimsPK is space k's pk: claims#<ns>#<instance> for a shared space,
// claimsof#<owner>#<ns>#<instance> for an owner's. Namespaces and instances
// hold no "#", so the last two fields always split the same way, whatever
// the owner holds.
func claimsPK(k claims.SpaceKey) string {
	if k.Shared {
		return claimsPrefix + k.Namespace + "#" + k.Instance
	}
	return claimsOwnerPrefix + k.Owner + "#" + k.Namespace + "#" + k.Instance
}

func claimsKey(k claims.SpaceKey) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: claimsPK(k)},
		attrSK: &types.AttributeValueMemberN{Value: claimsSK},
	}
}

// read loads the spaces cs touch for a session of owner, in a stable order
// (claims.SpacesOf), with consistent reads.
func (b *Broker) read(ctx context.Context, owner string, cs []claims.Claim) (storedSpaces, error) {
	return b.readKeys(ctx, claims.SpacesOf(owner, cs))
}

// readKeys loads spaces keys, in their order, with consistent reads.
func (b *Broker) readKeys(ctx context.Context, keys []claims.SpaceKey) (storedSpaces, error) {
	out := make(storedSpaces, 0, len(keys))
	for _, k := range keys {
		res, err := b.client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(b.table), ConsistentRead: aws.Bool(true), Key: claimsKey(k),
		}, b.opts...)
		if err != nil {
			return nil, fmt.Errorf("dynamo: read claims space %s: %w", claimsPK(k), err)
		}
		s := storedSpace{Space: claims.NewSpace(k)}
		if res.Item != nil {
			if s.version, err = decodeSpace(res.Item, s.Space); err != nil {
				return nil, fmt.Errorf("dynamo: read claims space %s: %w", claimsPK(k), err)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// decodeSpace decodes a space item into s and returns its version.
func decodeSpace(item map[string]types.AttributeValue, s *claims.Space) (int64, error) {
	v, ok1 := item[attrVersion].(*types.AttributeValueMemberN)
	body, ok2 := item[attrSpace].(*types.AttributeValueMemberS)
	if !ok1 || !ok2 {
		return 0, errors.New("malformed space item")
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		return 0, err
	}
	if err := json.Unmarshal([]byte(body.Value), s); err != nil {
		return 0, err
	}
	return n, nil
}

// put is the conditional write of s at its next version.
func (b *Broker) put(s storedSpace) (*types.Put, error) {
	body, err := json.Marshal(s.Space)
	if err != nil {
		return nil, err
	}
	item := claimsKey(s.Key())
	item[attrSpace] = &types.AttributeValueMemberS{Value: string(body)}
	return b.versionedPut(item, s.version), nil
}

// versionedPut puts item as version+1 of itself, on the condition that
// the stored item is still at version (0: not there yet).
func (b *Broker) versionedPut(item map[string]types.AttributeValue, version int64) *types.Put {
	item[attrVersion] = &types.AttributeValueMemberN{Value: strconv.FormatInt(version+1, 10)}
	p := &types.Put{TableName: aws.String(b.table), Item: item}
	if version == 0 {
		p.ConditionExpression = aws.String("attribute_not_exists(pk)")
	} else {
		p.ConditionExpression = aws.String("v = :v")
		p.ExpressionAttributeValues = map[string]types.AttributeValue{":v": &types.AttributeValueMemberN{Value: strconv.FormatInt(version, 10)}}
	}
	return p
}

// write stores the spaces, each only if its version is still the one
// read, with the extra puts (an orphan list): one conditional put, or one
// transaction for several, so a grant over several spaces is written whole
// or not at all.
func (b *Broker) write(ctx context.Context, spaces storedSpaces, extra ...*types.Put) error {
	puts := make([]*types.Put, len(spaces), len(spaces)+len(extra))
	for i, s := range spaces {
		p, err := b.put(s)
		if err != nil {
			return err
		}
		puts[i] = p
	}
	puts = append(puts, extra...)
	if len(puts) == 0 {
		return nil
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
	return fmt.Errorf("dynamo: write claims spaces: %w", err)
}
