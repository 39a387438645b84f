package dynamo

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The table layout. Keep every attribute and index name here, in one place.
//
// Fact items: pk = session, sk = seq (1..n), type, fact (JSON of reducer.Fact),
// writer.
// Head item:  pk = session, sk = 0, lastSeq, status, agent, owner, created,
// updated, turn, cause, and — only while something is due — dueShard, due, why,
// and rewoken once the tick has re-sent a lost wake (Store.Rewoke).
// Receipt items: pk = "receipt#" + key, sk = -1, request, answer, expires
// (the table's TTL attribute); they carry no index attribute, and their sk
// is outside every fact and head query.
// Claims items (the claims broker, package claimsdb, which keeps their
// names): pk = "claims#" + namespace
// + "#" + instance for a space shared by every owner, "claimsof#" + owner +
// "#" + namespace + "#" + instance for an owner's, sk = -3, v (the version
// every write checks), space (JSON of claims.Space); like receipts,
// outside every index, query and sweep. Orphan lists (claimsdb too): pk =
// "orphans#" + owner, sk = -4, v, orphans (JSON of the owner's orphaned
// claims.Grants), likewise outside every index. Session ids cannot hold
// "#", so no session's pk is one of these. Facts are sk >= 1, the head 0,
// receipts -1, tombstones -2.
const (
	attrPK       = "pk"       // S: session id
	attrSK       = "sk"       // N: seq; 0 is the head
	attrType     = "type"     // S: fact type
	attrFact     = "fact"     // S: JSON of reducer.Fact
	attrWriter   = "writer"   // S: on a fact item, a token naming the Append that wrote it
	attrLastSeq  = "lastSeq"  // N
	attrStatus   = "status"   // S
	attrAgent    = "agent"    // S
	attrOwner    = "owner"    // S, byOwner hash key; absent when the session has no owner
	attrCreated  = "created"  // S, byOwner range key; fixed-width RFC 3339 UTC, so it sorts
	attrUpdated  = "updated"  // S
	attrTurn     = "turn"     // S: open turn id, absent when idle
	attrCause    = "cause"    // S: suspension cause, absent unless suspended
	attrDueShard = "dueShard" // S, byDue hash key while due: the session's shard, dueShardKey(DueShardOf(pk))
	attrDue      = "due"      // N, byDue range key: unix milliseconds
	attrWhy      = "why"      // S: why the session is due
	attrRewoken  = "rewoken"  // N: unix milliseconds the tick last re-sent the session's wake; absent until it does, dropped by the next append
	// The session's recorded usage (reducer.State.Usage); each N, absent when 0.
	attrInputTokens  = "inputTokens"
	attrOutputTokens = "outputTokens"
	attrSteps        = "steps"
	attrCost         = "costMicroUSD"
	attrRequest      = "request" // S: receipt: hash of the request answered
	attrAnswer       = "answer"  // S: receipt: the answer, opaque to the store
	attrExpires      = "expires" // N: receipt: unix seconds; the TTL attribute

	// IndexByOwner lists an owner's sessions, newest first.
	IndexByOwner = "byOwner"
	// IndexByDue lists sessions the tick must look at, by due time.
	IndexByDue = "byDue"

	dueShard = "due" // shard 0's key, and the one key before the index was sharded
	headSK   = "0"

	receiptPrefix = "receipt#"
	receiptSK     = -1
)

// AttrPK and AttrSK are the table's key attributes, for the items other
// packages keep on the session table (the claims broker, package
// claimsdb).
const (
	AttrPK = attrPK
	AttrSK = attrSK
)

// timeLayout is RFC 3339 with a fixed nine-digit fraction, always UTC. Unlike
// time.RFC3339Nano it never trims zeros, so strings sort in time order; it
// still parses with time.RFC3339Nano.
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// TableInput describes the facts table the store needs: pay-per-request,
// with the byOwner and byDue global secondary indexes (both sparse,
// projecting all attributes). The SAM template declares the table, and a
// test checks that it agrees with this.
func TableInput(table string) *dynamodb.CreateTableInput {
	gsi := func(name, hash, rng string) types.GlobalSecondaryIndex {
		return types.GlobalSecondaryIndex{
			IndexName: aws.String(name),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(rng), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}
	}
	def := func(name string, t types.ScalarAttributeType) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: t}
	}
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			def(attrPK, types.ScalarAttributeTypeS),
			def(attrSK, types.ScalarAttributeTypeN),
			def(attrOwner, types.ScalarAttributeTypeS),
			def(attrCreated, types.ScalarAttributeTypeS),
			def(attrDueShard, types.ScalarAttributeTypeS),
			def(attrDue, types.ScalarAttributeTypeN),
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrSK), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			gsi(IndexByOwner, attrOwner, attrCreated),
			gsi(IndexByDue, attrDueShard, attrDue),
		},
	}
}
