package claimsdb

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/baton-run/baton/internal/claims"
)

// Orphaned grants: a grant whose session was deleted while its effect may
// still have run stays held, quarantined for good, until an operator
// releases it. Each owner's orphans are listed in one item (pk "orphans#"
// + owner, sk -4; see schema.go), written in the same transaction as the
// spaces it marks or frees, so a grant is orphaned (listed and marked) or
// not at all, and released (freed and unlisted) or not at all.

// maxOrphanList bounds the JSON of one owner's orphan list, well within
// DynamoDB's 400 KB item: past it, Orphan fails (and with it the delete
// that asked), until an operator releases some.
const maxOrphanList = 300 << 10

// orphanList is an owner's orphan list as read, with its item's version
// (0: no item yet).
type orphanList struct {
	owner   string
	grants  []claims.Grant
	version int64
}

func orphansKey(owner string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: orphansPrefix + owner},
		attrSK: &types.AttributeValueMemberN{Value: orphansSK},
	}
}

// readOrphans loads owner's orphan list, with a consistent read.
func (b *Broker) readOrphans(ctx context.Context, owner string) (orphanList, error) {
	l := orphanList{owner: owner}
	res, err := b.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(b.table), ConsistentRead: aws.Bool(true), Key: orphansKey(owner),
	}, b.opts...)
	if err != nil {
		return l, fmt.Errorf("dynamo: read the orphaned grants of %q: %w", owner, err)
	}
	if res.Item == nil {
		return l, nil
	}
	v, ok1 := res.Item[attrVersion].(*types.AttributeValueMemberN)
	body, ok2 := res.Item[attrOrphans].(*types.AttributeValueMemberS)
	if !ok1 || !ok2 {
		return l, fmt.Errorf("dynamo: read the orphaned grants of %q: malformed item", owner)
	}
	if l.version, err = strconv.ParseInt(v.Value, 10, 64); err == nil {
		err = json.Unmarshal([]byte(body.Value), &l.grants)
	}
	if err != nil {
		return l, fmt.Errorf("dynamo: read the orphaned grants of %q: %w", owner, err)
	}
	return l, nil
}

// putOrphans is the conditional write of l at its next version.
func (b *Broker) putOrphans(l orphanList) (*types.Put, error) {
	body, err := json.Marshal(l.grants)
	if err != nil {
		return nil, err
	}
	if len(body) > maxOrphanList {
		return nil, fmt.Errorf("dynamo: the orphaned grants of %q fill their list (%d bytes, at most %d): release some first",
			l.owner, len(body), maxOrphanList)
	}
	item := orphansKey(l.owner)
	item[attrOrphans] = &types.AttributeValueMemberS{Value: string(body)}
	return b.versionedPut(item, l.version), nil
}

// Orphan: see claims.Broker. The grant as the spaces hold it is listed,
// marked orphaned and quarantined, with the time it was orphaned as its
// deadline (no deadline frees it; the time only tells an operator).
func (b *Broker) Orphan(ctx context.Context, g claims.Grant) error {
	return raced(ctx, func() error {
		spaces, err := b.read(ctx, g.Owner, g.Claims)
		if err != nil {
			return err
		}
		held, ok := heldIn(spaces, g.ID)
		if !ok {
			return nil // released meanwhile: nothing to orphan
		}
		l, err := b.readOrphans(ctx, g.Owner)
		if err != nil {
			return err
		}
		changed := claims.MarkOrphaned(spaces.all(), g.ID)
		var extra []*types.Put
		if !slices.ContainsFunc(l.grants, func(x claims.Grant) bool { return x.ID == g.ID }) {
			held.Quarantined, held.Orphaned, held.Deadline = true, true, b.now()
			l.grants = append(l.grants, held)
			p, err := b.putOrphans(l)
			if err != nil {
				return err
			}
			extra = append(extra, p)
		}
		if !changed && len(extra) == 0 {
			return nil
		}
		if !changed {
			spaces = nil // only the list changes
		}
		return b.write(ctx, spaces, extra...)
	})
}

// heldIn returns grant id as the first of spaces that holds it has it.
func heldIn(spaces storedSpaces, id string) (claims.Grant, bool) {
	for _, s := range spaces {
		if i := slices.IndexFunc(s.Grants, func(g claims.Grant) bool { return g.ID == id }); i >= 0 {
			return s.Grants[i], true
		}
	}
	return claims.Grant{}, false
}

// Orphans: see claims.Broker.
func (b *Broker) Orphans(ctx context.Context, owner string) ([]claims.Grant, error) {
	l, err := b.readOrphans(ctx, owner)
	return l.grants, err
}

// ReleaseOrphan: see claims.Broker.
func (b *Broker) ReleaseOrphan(ctx context.Context, owner, grantID string) ([]claims.Waiter, error) {
	var ready []claims.Waiter
	err := raced(ctx, func() error {
		l, err := b.readOrphans(ctx, owner)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(l.grants, func(x claims.Grant) bool { return x.ID == grantID })
		if i < 0 {
			return fmt.Errorf("dynamo: release grant %s of %q: %w", grantID, owner, claims.ErrNotOrphan)
		}
		g := l.grants[i]
		spaces, err := b.read(ctx, g.Owner, g.Claims)
		if err != nil {
			return err
		}
		var changed bool
		ready, changed = b.policy().Free(spaces.all(), g.ID, b.now())
		if !changed {
			spaces = nil
		}
		l.grants = slices.Delete(l.grants, i, i+1)
		p, err := b.putOrphans(l)
		if err != nil {
			return err
		}
		return b.write(ctx, spaces, p)
	})
	if err != nil {
		return nil, err
	}
	return ready, nil
}
