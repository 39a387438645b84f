package claimsdb

import "github.com/baton-run/baton/internal/dynamo"

// The broker's items on the session table (see dynamo's schema.go, which
// reserves their keys): a claims space is pk "claims#" + namespace + "#" +
// instance when every owner shares it, "claimsof#" + owner + "#" +
// namespace + "#" + instance when it is an owner's, sk -3, v, space (JSON
// of claims.Space); an owner's orphan list is pk "orphans#" + owner, sk
// -4, v, orphans (JSON of the owner's orphaned claims.Grants).
const (
	attrPK = dynamo.AttrPK
	attrSK = dynamo.AttrSK

	claimsPrefix      = "claims#"
	claimsOwnerPrefix = "claimsof#"
	claimsSK          = "-3"
	orphansPrefix     = "orphans#"
	orphansSK         = "-4"
	attrOrphans       = "orphans" // S: orphan list: JSON of []claims.Grant
	attrVersion       = "v"       // N: claims item: its version
	attrSpace         = "space"   // S: claims item: JSON of claims.Space
)
