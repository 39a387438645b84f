package dynamo

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DueShards is the number of partitions of the byDue index. A due head's
// dueShard attribute names the shard of its session (DueShardOf), so index
// writes and the tick's reads spread over DueShards partition keys instead of
// one hot one. Shard 0 is spelled "due", the value every due head carried
// before the index was sharded: heads written then stay readable, in shard 0,
// until their session's next write moves them to their own shard. Changing
// DueShards would strand heads in shards no longer read; it is a constant.
const DueShards = 16

// DueShardOf is the byDue shard of a session: FNV-1a of its id, modulo
// DueShards.
func DueShardOf(session string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(session)) // never fails
	return int(h.Sum32() % DueShards)
}

// dueShardKey is shard's dueShard value: "due" for 0, "due#1" to "due#15".
func dueShardKey(shard int) string {
	if shard == 0 {
		return dueShard
	}
	return dueShard + "#" + strconv.Itoa(shard)
}

// validShardKey says whether v may be the dueShard of session's head: its
// own shard's key, or the unsharded "due" of a head written before sharding.
func validShardKey(session, v string) bool {
	return v == dueShard || v == dueShardKey(DueShardOf(session))
}

// Due calls fn with every head of shard due at or before before, the
// longest overdue first, reading up to limit heads per page (0 means
// DefaultLimit); it returns the pages read. It stops at fn's first error and
// returns it.
//
// Heads may move while Due pages, fn's own doing or anyone's: a head acted
// on is due later or no longer. So each page is a fresh query from the last
// due time seen (due BETWEEN last AND before), never a resume from a cursor
// item: a head that stays due is never skipped, whatever moved around it
// (kumo resumes a cursor from its item's current place, which skips when
// that item moved; DynamoDB resumes from the key's values). A head at the
// boundary may come again, and a moved head may come again later, due
// later: fn sees it again and must tolerate that. When a full page holds
// nothing past the time it started from, the heads due at that one
// millisecond are read whole before fn sees any of them. Index reads are
// eventually consistent.
func (s *Store) Due(ctx context.Context, shard int, before time.Time, limit int32, fn func(Head) error) (int, error) {
	switch {
	case shard < 0 || shard >= DueShards:
		return 0, fmt.Errorf("dynamo: list due sessions: shard %d outside 0..%d", shard, DueShards-1)
	case limit < 0:
		return 0, fmt.Errorf("dynamo: list due sessions: negative limit %d", limit)
	case limit == 0:
		limit = DefaultLimit
	}
	pages, from := 0, int64(0)
	for {
		heads, more, err := s.duePage(ctx, shard, from, before.UnixMilli(), limit)
		pages++
		if err != nil {
			return pages, err
		}
		if more && len(heads) > 0 && heads[len(heads)-1].Due.UnixMilli() == from {
			// A page of ties: read them all, then go on past them.
			tied, n, err := s.dueAt(ctx, shard, from)
			pages += n
			if err != nil {
				return pages, err
			}
			heads, from = tied, from+1
		} else if len(heads) > 0 {
			from = heads[len(heads)-1].Due.UnixMilli()
		}
		for _, h := range heads {
			if err := fn(h); err != nil {
				return pages, err
			}
		}
		if !more || len(heads) == 0 || from > before.UnixMilli() {
			return pages, nil
		}
	}
}

// duePage is one query of shard's heads due in [from, before] (unix
// milliseconds), oldest first: the heads and whether more may follow.
func (s *Store) duePage(ctx context.Context, shard int, from, before int64, limit int32) ([]Head, bool, error) {
	out, err := s.query(ctx, &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		IndexName:                aws.String(IndexByDue),
		KeyConditionExpression:   aws.String("#shard = :shard AND #due BETWEEN :from AND :before"),
		ExpressionAttributeNames: map[string]string{"#shard": attrDueShard, "#due": attrDue},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":shard": str(dueShardKey(shard)), ":from": num(from), ":before": num(before),
		},
		ScanIndexForward: aws.Bool(true),
		Limit:            aws.Int32(limit),
	})
	if err != nil {
		return nil, false, fmt.Errorf("dynamo: list sessions of due shard %d due by %d: %w", shard, before, err)
	}
	heads, err := decodeHeads(out.Items)
	if err != nil {
		return nil, false, fmt.Errorf("dynamo: list sessions of due shard %d: %w", shard, err)
	}
	return heads, len(out.LastEvaluatedKey) > 0, nil
}

// dueAt reads every head of shard due at the millisecond at, following
// DynamoDB's own pages (1 MB each): nothing has been acted on while it
// reads, so no cursor item has moved. It returns the heads and the queries
// made.
func (s *Store) dueAt(ctx context.Context, shard int, at int64) ([]Head, int, error) {
	in := &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		IndexName:                aws.String(IndexByDue),
		KeyConditionExpression:   aws.String("#shard = :shard AND #due = :at"),
		ExpressionAttributeNames: map[string]string{"#shard": attrDueShard, "#due": attrDue},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":shard": str(dueShardKey(shard)), ":at": num(at),
		},
	}
	var all []Head
	for n := 1; ; n++ {
		out, err := s.query(ctx, in)
		if err != nil {
			return nil, n, fmt.Errorf("dynamo: list sessions of due shard %d due at %d: %w", shard, at, err)
		}
		heads, err := decodeHeads(out.Items)
		if err != nil {
			return nil, n, fmt.Errorf("dynamo: list sessions of due shard %d: %w", shard, err)
		}
		all = append(all, heads...)
		if len(out.LastEvaluatedKey) == 0 {
			return all, n, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// decodeHeads decodes the byDue index's items: heads, and tombstones whose
// purge was deferred (DeferPurge), as a Head with only Session, Why
// (WhyPurge) and Due.
func decodeHeads(items []map[string]types.AttributeValue) ([]Head, error) {
	heads := make([]Head, 0, len(items))
	for _, item := range items {
		if sk, _ := numAttr(item, attrSK); sk == tombstoneSK {
			ms, err := numAttr(item, attrDue)
			if err != nil {
				return nil, fmt.Errorf("tombstone of %s: %w", strAttr(item, attrPK), err)
			}
			heads = append(heads, Head{Session: strAttr(item, attrPK), Why: WhyPurge, Due: time.UnixMilli(ms).UTC()})
			continue
		}
		h, err := decodeHead(item)
		if err != nil {
			return nil, err
		}
		heads = append(heads, h)
	}
	return heads, nil
}
