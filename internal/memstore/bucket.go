package memstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/baton-run/baton/internal/clock"
)

// Bucket is one S3 bucket in memory, with the S3 calls a streams.Store
// makes (streams.S3): PutObject honouring If-None-Match and If-Match,
// GetObject, HeadObject, ListObjectsV2 in key order with StartAfter, MaxKeys
// and continuation, and DeleteObject. A refused condition fails as S3 does,
// with the error code PreconditionFailed; a missing key with NoSuchKey (Get)
// or NotFound (Head). It ignores the input's bucket name. It is safe for
// concurrent use.
type Bucket struct {
	// Directory gives the bucket the rules of an S3 Express One Zone
	// directory bucket: a listing comes back in no order, and a listing
	// with StartAfter is refused.
	Directory bool

	now     clock.Clock
	mu      sync.Mutex
	objects map[string]object
	rng     *rand.Rand
}

type object struct {
	body     []byte
	meta     map[string]string
	etag     string
	modified time.Time
}

// NewBucket is an empty bucket whose objects are stamped by now (nil is
// the wall clock).
func NewBucket(now clock.Clock) *Bucket {
	return &Bucket{now: now, objects: map[string]object{}, rng: rand.New(rand.NewPCG(1, 2))}
}

// maxKeys is S3's page size and the most MaxKeys may ask for.
const maxKeys = 1000

func apiError(code, msg string) error {
	return &smithy.GenericAPIError{Code: code, Message: msg, Fault: smithy.FaultClient}
}

// PutObject stores the object, unless IfNoneMatch is "*" and the key is
// taken or IfMatch names another ETag than the stored one.
func (b *Bucket) PutObject(ctx context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	key := aws.ToString(in.Key)
	if key == "" {
		return nil, apiError("InvalidArgument", "no key")
	}
	var body []byte
	if in.Body != nil {
		var err error
		if body, err = io.ReadAll(in.Body); err != nil {
			return nil, fmt.Errorf("memstore: read the body of %s: %w", key, err)
		}
	}
	sum := sha256.Sum256(body)
	o := object{body: body, meta: maps.Clone(in.Metadata), etag: `"` + hex.EncodeToString(sum[:16]) + `"`, modified: b.now.Now().UTC()}
	b.mu.Lock()
	defer b.mu.Unlock()
	old, exists := b.objects[key]
	switch {
	case aws.ToString(in.IfNoneMatch) == "*" && exists:
		return nil, apiError("PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
	case in.IfMatch != nil && (!exists || aws.ToString(in.IfMatch) != old.etag):
		if !exists {
			return nil, apiError("NoSuchKey", "The specified key does not exist.")
		}
		return nil, apiError("PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
	}
	b.objects[key] = o
	return &s3.PutObjectOutput{ETag: aws.String(o.etag)}, nil
}

func (b *Bucket) get(ctx context.Context, key string) (object, bool, error) {
	if err := ctx.Err(); err != nil {
		return object{}, false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.objects[key]
	return o, ok, nil
}

// GetObject returns the object's body and metadata.
func (b *Bucket) GetObject(ctx context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	key := aws.ToString(in.Key)
	o, ok, err := b.get(ctx, key)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &types.NoSuchKey{Message: aws.String("The specified key does not exist.")}
	}
	return &s3.GetObjectOutput{
		Body: io.NopCloser(bytes.NewReader(slices.Clone(o.body))), ContentLength: aws.Int64(int64(len(o.body))),
		Metadata: maps.Clone(o.meta), ETag: aws.String(o.etag), LastModified: aws.Time(o.modified),
	}, nil
}

// HeadObject returns the object's metadata.
func (b *Bucket) HeadObject(ctx context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	o, ok, err := b.get(ctx, aws.ToString(in.Key))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &types.NotFound{Message: aws.String("Not Found")}
	}
	return &s3.HeadObjectOutput{ContentLength: aws.Int64(int64(len(o.body))), Metadata: maps.Clone(o.meta),
		ETag: aws.String(o.etag), LastModified: aws.Time(o.modified)}, nil
}

// ListObjectsV2 lists the keys under Prefix after StartAfter, in key order
// (in no order on a directory bucket, which refuses StartAfter), MaxKeys
// (at most 1000) a page, continued by NextContinuationToken.
func (b *Bucket) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if b.Directory && aws.ToString(in.StartAfter) != "" {
		return nil, apiError("InvalidArgument", "StartAfter is not supported by directory buckets")
	}
	limit := maxKeys
	if in.MaxKeys != nil && *in.MaxKeys >= 0 && int(*in.MaxKeys) < limit {
		limit = int(*in.MaxKeys)
	}
	after := aws.ToString(in.StartAfter)
	if tok := aws.ToString(in.ContinuationToken); tok != "" {
		after = tok
	}
	prefix := aws.ToString(in.Prefix)
	b.mu.Lock()
	var keys []string
	for k := range b.objects {
		if strings.HasPrefix(k, prefix) && k > after {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := &s3.ListObjectsV2Output{Prefix: in.Prefix, MaxKeys: aws.Int32(int32(limit))}
	if len(keys) > limit {
		keys = keys[:limit]
		out.IsTruncated = aws.Bool(true)
		out.NextContinuationToken = aws.String(keys[len(keys)-1])
	} else {
		out.IsTruncated = aws.Bool(false)
	}
	for _, k := range keys {
		o := b.objects[k]
		out.Contents = append(out.Contents, types.Object{Key: aws.String(k), Size: aws.Int64(int64(len(o.body))),
			ETag: aws.String(o.etag), LastModified: aws.Time(o.modified)})
	}
	if b.Directory {
		b.rng.Shuffle(len(out.Contents), func(i, j int) { out.Contents[i], out.Contents[j] = out.Contents[j], out.Contents[i] })
	}
	b.mu.Unlock()
	out.KeyCount = aws.Int32(int32(len(out.Contents)))
	return out, nil
}

// DeleteObject deletes the object; a missing key is no error.
func (b *Bucket) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, _ ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.objects, aws.ToString(in.Key))
	return &s3.DeleteObjectOutput{}, nil
}

// Keys are the bucket's keys under prefix, in order.
func (b *Bucket) Keys(prefix string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var keys []string
	for k := range b.objects {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
