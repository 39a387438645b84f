package dynamo

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/baton-run/baton/pkg/reducer"
)

// DefaultLimit is the page size ByOwner and Due use when limit is 0.
const DefaultLimit = 50

// ErrBadCursor is matched when a listing cursor was not produced by the same
// kind of listing.
var ErrBadCursor = errors.New("dynamo: bad cursor")

// Head is the summary of a session kept beside its facts.
type Head struct {
	Session string
	Agent   string
	Owner   string
	Status  reducer.Status
	LastSeq int64
	Created time.Time
	Updated time.Time
	// Turn is the open turn, "" when idle; Cause why it is suspended.
	Turn  string
	Cause reducer.Cause
	// Due is when the tick must next look at the session, and Why; zero
	// and "" when nothing is due (see reducer.State.Next).
	Due time.Time
	Why reducer.Reason
	// Rewoken is when the tick last re-sent the wake the session waits for
	// (Store.Rewoke), zero when it has not since the session's last fact;
	// Due is then when the tick may re-send it again.
	Rewoken time.Time
	// Usage is the session's recorded usage: its ended turns' billed
	// steps, and the open turn's as its last suspension recorded them.
	Usage reducer.Usage
}

// usageAttrs are the head's usage attributes and the fields they hold.
func usageAttrs(u *reducer.Usage) []struct {
	name string
	v    *int64
} {
	return []struct {
		name string
		v    *int64
	}{{attrInputTokens, &u.InputTokens}, {attrOutputTokens, &u.OutputTokens}, {attrSteps, &u.Steps}, {attrCost, &u.CostMicroUSD}}
}

// headItem is the whole head item for a session in state st. Optional
// attributes are left out rather than written empty, and since Append puts
// the item whole, attributes that no longer apply disappear.
func headItem(session string, st reducer.State) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{
		attrPK:      str(session),
		attrSK:      num(0),
		attrLastSeq: num(st.LastSeq),
		attrStatus:  str(string(st.Status)),
		attrAgent:   str(st.Agent),
		attrCreated: str(formatTime(st.Created)),
		attrUpdated: str(formatTime(st.Updated)),
	}
	if st.Owner != "" { // index keys cannot be empty: no owner, not listed
		item[attrOwner] = str(st.Owner)
	}
	if st.Turn != nil {
		item[attrTurn] = str(st.Turn.ID)
		if st.Turn.Cause != "" {
			item[attrCause] = str(string(st.Turn.Cause))
		}
	}
	u := st.Usage
	for _, a := range usageAttrs(&u) {
		if *a.v != 0 {
			item[a.name] = num(*a.v)
		}
	}
	if n := st.Next(st.Updated, 0); !n.Due.IsZero() {
		item[attrDueShard] = str(dueShardKey(DueShardOf(session)))
		item[attrDue] = num(n.Due.UnixMilli())
		item[attrWhy] = str(string(n.Reason))
	}
	return item
}

func decodeHead(item map[string]types.AttributeValue) (Head, error) {
	h := Head{
		Session: strAttr(item, attrPK),
		Agent:   strAttr(item, attrAgent),
		Owner:   strAttr(item, attrOwner),
		Status:  reducer.Status(strAttr(item, attrStatus)),
		Turn:    strAttr(item, attrTurn),
		Cause:   reducer.Cause(strAttr(item, attrCause)),
		Why:     reducer.Reason(strAttr(item, attrWhy)),
	}
	var err error
	if h.LastSeq, err = numAttr(item, attrLastSeq); err != nil {
		return Head{}, fmt.Errorf("head of %s: %w", h.Session, err)
	}
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{attrCreated, &h.Created}, {attrUpdated, &h.Updated}} {
		if v := strAttr(item, t.name); v != "" {
			if *t.dst, err = time.Parse(time.RFC3339Nano, v); err != nil {
				return Head{}, fmt.Errorf("head of %s: attribute %s: %w", h.Session, t.name, err)
			}
		}
	}
	for _, a := range usageAttrs(&h.Usage) {
		if _, ok := item[a.name]; !ok {
			continue
		}
		if *a.v, err = numAttr(item, a.name); err != nil {
			return Head{}, fmt.Errorf("head of %s: %w", h.Session, err)
		}
	}
	if _, ok := item[attrDue]; ok {
		ms, err := numAttr(item, attrDue)
		if err != nil {
			return Head{}, fmt.Errorf("head of %s: %w", h.Session, err)
		}
		h.Due = time.UnixMilli(ms).UTC()
	}
	if _, ok := item[attrRewoken]; ok {
		ms, err := numAttr(item, attrRewoken)
		if err != nil {
			return Head{}, fmt.Errorf("head of %s: %w", h.Session, err)
		}
		h.Rewoken = time.UnixMilli(ms).UTC()
	}
	if err := checkHead(item, h); err != nil {
		return Head{}, fmt.Errorf("head of %q: %w", h.Session, err)
	}
	return h, nil
}

// Head returns the session's head, read consistently, or an error matching
// ErrNotFound.
func (s *Store) Head(ctx context.Context, session string) (Head, error) {
	out, err := s.getItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            map[string]types.AttributeValue{attrPK: str(session), attrSK: num(0)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Head{}, fmt.Errorf("dynamo: read head of %s: %w", session, err)
	}
	if len(out.Item) == 0 {
		return Head{}, fmt.Errorf("dynamo: read head of %s: %w", session, ErrNotFound)
	}
	h, err := decodeHead(out.Item)
	if err != nil {
		return Head{}, fmt.Errorf("dynamo: read head of %s: %w", session, err)
	}
	return h, nil
}

// ByOwner lists the owner's sessions, newest first, up to limit per page
// (0 means DefaultLimit). cursor is "" for the first page, then the cursor
// returned by the previous page; "" is returned after the last page (a
// non-empty cursor may still lead to an empty page). Index reads are
// eventually consistent.
func (s *Store) ByOwner(ctx context.Context, owner string, limit int32, cursor string) ([]Head, string, error) {
	if owner == "" {
		return nil, "", errors.New("dynamo: list sessions by owner: no owner")
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(IndexByOwner),
		KeyConditionExpression:    aws.String("#owner = :owner"),
		ExpressionAttributeNames:  map[string]string{"#owner": attrOwner},
		ExpressionAttributeValues: map[string]types.AttributeValue{":owner": str(owner)},
		ScanIndexForward:          aws.Bool(false),
	}
	heads, next, err := s.list(ctx, in, limit, cursor, ownerCursor(owner))
	if err != nil {
		return nil, "", fmt.Errorf("dynamo: list sessions of owner %s: %w", owner, err)
	}
	return heads, next, nil
}

// list runs one page of an index query.
func (s *Store) list(ctx context.Context, in *dynamodb.QueryInput, limit int32, cursor string, kind cursorKind) ([]Head, string, error) {
	switch {
	case limit < 0:
		return nil, "", fmt.Errorf("negative limit %d", limit)
	case limit == 0:
		limit = DefaultLimit
	}
	in.Limit = aws.Int32(limit)
	if cursor != "" {
		start, err := decodeCursor(cursor, kind)
		if err != nil {
			return nil, "", err
		}
		in.ExclusiveStartKey = start
	}
	out, err := s.query(ctx, in)
	if err != nil {
		return nil, "", err
	}
	heads, err := decodeHeads(out.Items)
	if err != nil {
		return nil, "", err
	}
	last := out.LastEvaluatedKey
	if len(last) > 0 && len(out.Items) > 0 {
		// DynamoDB's key of an index page names the table and index keys;
		// an emulator may leave out the index keys. Fill them in from the
		// last item, so every cursor is bound to its listing.
		last = maps.Clone(last)
		item := out.Items[len(out.Items)-1]
		for name := range kind.attrs {
			if _, ok := last[name]; !ok && item[name] != nil {
				last[name] = item[name]
			}
		}
	}
	next, err := encodeCursor(last)
	if err != nil {
		return nil, "", err
	}
	return heads, next, nil
}

// cursorKind says which attributes a listing's cursor may hold, with their
// types ('S' or 'N'), and which values are fixed by the query.
type cursorKind struct {
	attrs map[string]byte
	fixed map[string]string
}

func ownerCursor(owner string) cursorKind {
	return cursorKind{
		attrs: map[string]byte{attrPK: 'S', attrSK: 'N', attrOwner: 'S', attrCreated: 'S'},
		fixed: map[string]string{attrOwner: owner},
	}
}

// cursorValue is one key attribute in a cursor.
type cursorValue struct {
	S *string `json:"S,omitempty"`
	N *string `json:"N,omitempty"`
}

// encodeCursor turns a LastEvaluatedKey into base64url JSON; nil gives "".
func encodeCursor(key map[string]types.AttributeValue) (string, error) {
	if len(key) == 0 {
		return "", nil
	}
	m := make(map[string]cursorValue, len(key))
	for name, v := range key {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			m[name] = cursorValue{S: aws.String(v.Value)}
		case *types.AttributeValueMemberN:
			m[name] = cursorValue{N: aws.String(v.Value)}
		default:
			return "", fmt.Errorf("encode cursor: key attribute %s has type %T", name, v)
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encode cursor: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// decodeCursor checks a cursor against the listing it is used for and turns
// it back into an ExclusiveStartKey.
func decodeCursor(cursor string, kind cursorKind) (map[string]types.AttributeValue, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadCursor, fmt.Sprintf(format, args...))
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return nil, bad("not base64url")
	}
	var m map[string]cursorValue
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil || dec.More() {
		return nil, bad("not a key")
	}
	for _, name := range slices.Sorted(maps.Keys(kind.attrs)) {
		if _, ok := m[name]; !ok {
			return nil, bad("no %s", name)
		}
	}
	key := make(map[string]types.AttributeValue, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		v := m[name]
		want, ok := kind.attrs[name]
		switch {
		case !ok:
			return nil, bad("unexpected attribute %q", name)
		case want == 'S' && v.S != nil && v.N == nil:
			if fixed, ok := kind.fixed[name]; ok && *v.S != fixed {
				return nil, bad("%s is not %q", name, fixed)
			}
			key[name] = str(*v.S)
		case want == 'N' && v.N != nil && v.S == nil:
			if _, err := strconv.ParseInt(*v.N, 10, 64); err != nil {
				return nil, bad("%s is not an integer", name)
			}
			key[name] = &types.AttributeValueMemberN{Value: *v.N}
		default:
			return nil, bad("attribute %s has the wrong type", name)
		}
	}
	return key, nil
}
