package streams

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/parts"
)

// Errors callers can test for with errors.Is.
var (
	// ErrChunkTaken means a chunk this sink meant to write already exists:
	// another writer got there first, so this one is stale.
	ErrChunkTaken = errors.New("streams: chunk already written")
	// ErrPoisoned means the sink lost a race for a chunk earlier and will
	// not write again.
	ErrPoisoned = errors.New("streams: sink poisoned by a lost chunk race")
	// ErrClosed means the stream was already closed.
	ErrClosed = errors.New("streams: stream closed")
	// ErrBadCursor means a cursor is malformed or names no stored part.
	ErrBadCursor = errors.New("streams: bad cursor")
	// ErrInvalid means an argument (session or stream id, part, status) is
	// not acceptable.
	ErrInvalid = errors.New("streams: invalid argument")
	// ErrCorrupt means the stored objects of a stream break the layout
	// this package writes (a missing chunk, a chunk after the closing one,
	// a key or body it cannot parse).
	ErrCorrupt = errors.New("streams: corrupt stream")
	// ErrNotFound means a snapshot does not exist.
	ErrNotFound = errors.New("streams: not found")
	// ErrExists means a snapshot key is already taken.
	ErrExists = errors.New("streams: already exists")
)

// ChunkTakenError reports that chunk Index, stored at Key, was already
// written by someone else. errors.Is(err, ErrChunkTaken) holds for it.
type ChunkTakenError struct {
	Key   string
	Index int
}

func (e *ChunkTakenError) Error() string {
	return fmt.Sprintf("streams: chunk %d already written (%s): stale writer", e.Index, e.Key)
}

// Is makes errors.Is(err, ErrChunkTaken) true.
func (e *ChunkTakenError) Is(target error) bool { return target == ErrChunkTaken }

// maxChunks bounds chunk indices to what the key's %010d keeps sortable.
const maxChunks = 10_000_000_000

// getConcurrency bounds the GetObject requests one call has in flight.
const getConcurrency = 8

// S3 is the part of the S3 API a Store calls: conditional PutObject
// (If-None-Match), GetObject, HeadObject, ListObjectsV2 and DeleteObject.
// *s3.Client is one; internal/memstore's Bucket is one in memory.
type S3 interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

var _ S3 = (*s3.Client)(nil)

// Store keeps turn streams and snapshots in one S3 bucket. It holds no
// mutable state and is safe for concurrent use.
type Store struct {
	client S3
	bucket string
	// directory says the bucket is an S3 Express One Zone directory
	// bucket, whose listings are unordered and refuse StartAfter.
	directory bool
}

// New returns a Store on bucket.
func New(client S3, bucket string) *Store {
	return &Store{client: client, bucket: bucket}
}

// Bucket returns the store's bucket name.
func (s *Store) Bucket() string { return s.bucket }

// ChunkKey is the object key of chunk index of a stream:
// streams/<session>/<stream>/<index %010d>.json.
func ChunkKey(session, stream string, index int) string {
	return fmt.Sprintf("%s%010d.json", streamPrefix(session, stream), index)
}

func sessionPrefix(session string) string { return "streams/" + session + "/" }

func streamPrefix(session, stream string) string {
	return sessionPrefix(session) + stream + "/"
}

// parseChunkName parses "<index %010d>.json".
func parseChunkName(name string) (int, bool) {
	digits, ok := strings.CutSuffix(name, ".json")
	if !ok || len(digits) != 10 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil
}

// checkID refuses ids that would not map to exactly one key prefix.
func checkID(what, id string) error {
	if err := ids.Check(id); err != nil {
		return fmt.Errorf("%w: %s %w", ErrInvalid, what, err)
	}
	return nil
}

// chunkDoc is the body of a chunk object.
type chunkDoc struct {
	Parts  []parts.Part `json:"parts"`
	Closed Status       `json:"closed,omitempty"`
}

// listKeys lists the keys under prefix that sort after startAfter (all of
// them when it is empty), in order, one ListObjectsV2 request per 1000
// keys. A positive limit stops the listing once it has more than limit
// keys. A directory bucket lists in no order and takes no StartAfter: there
// every key under prefix is listed, then sorted and filtered here, and at
// most limit+1 of them kept when limit is positive.
func (s *Store) listKeys(ctx context.Context, prefix, startAfter string, limit int) ([]string, error) {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(prefix)}
	if !s.directory {
		if startAfter != "" {
			in.StartAfter = aws.String(startAfter)
		}
		if limit > 0 && limit < 1000 {
			in.MaxKeys = aws.Int32(int32(limit + 1))
		}
	}
	var keys []string
	for page := 1; ; page++ {
		out, err := s.client.ListObjectsV2(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("list %s (page %d): %w", prefix, page, err)
		}
		for _, o := range out.Contents {
			if k := aws.ToString(o.Key); k > startAfter {
				keys = append(keys, k)
			}
		}
		enough := !s.directory && limit > 0 && len(keys) > limit
		if enough || !aws.ToBool(out.IsTruncated) || aws.ToString(out.NextContinuationToken) == "" {
			break
		}
		in.ContinuationToken = out.NextContinuationToken
	}
	if s.directory {
		slices.Sort(keys)
		if limit > 0 && len(keys) > limit+1 {
			keys = keys[:limit+1]
		}
	}
	return keys, nil
}

// listChunks lists a stream's chunks after chunk first-1, in order, and
// checks they are numbered first, first+1, … without gaps. A positive
// limit lists at most limit+1 of them.
func (s *Store) listChunks(ctx context.Context, session, stream string, first, limit int) ([]string, error) {
	prefix := streamPrefix(session, stream)
	after := ""
	if first > 0 {
		after = ChunkKey(session, stream, first-1)
	}
	keys, err := s.listKeys(ctx, prefix, after, limit)
	if err != nil {
		return nil, err
	}
	for i, key := range keys {
		n, ok := parseChunkName(strings.TrimPrefix(key, prefix))
		if !ok {
			return nil, fmt.Errorf("%w: unexpected object %s", ErrCorrupt, key)
		}
		if n != first+i {
			return nil, fmt.Errorf("%w: chunk %d missing before %s", ErrCorrupt, first+i, key)
		}
	}
	return keys, nil
}

// getChunks reads the chunk objects keys, a few at a time, in order.
func (s *Store) getChunks(ctx context.Context, keys []string) ([]chunkDoc, error) {
	docs := make([]chunkDoc, len(keys))
	errs := make([]error, len(keys))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, getConcurrency)
	var wg sync.WaitGroup
	for i, key := range keys {
		sem <- struct{}{}
		if ctx.Err() != nil {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			docs[i], errs[i] = s.getChunk(ctx, key)
			if errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	// Report the first real failure rather than the cancellations it caused.
	var first error
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
		if err != nil && first == nil {
			first = err
		}
	}
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	if first != nil {
		return nil, first
	}
	return docs, nil
}

func (s *Store) getChunk(ctx context.Context, key string) (chunkDoc, error) {
	body, err := s.getObject(ctx, key)
	if err != nil {
		return chunkDoc{}, err
	}
	return parseChunk(key, body)
}

func (s *Store) getObject(ctx context.Context, key string) ([]byte, error) {
	body, _, err := s.getObjectMeta(ctx, key)
	return body, err
}

// getObjectMeta returns an object's body and user metadata.
func (s *Store) getObjectMeta(ctx context.Context, key string) ([]byte, map[string]string, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		var nsk *types.NoSuchKey
		if errors.As(err, &nsk) {
			return nil, nil, fmt.Errorf("get %s: %w: %w", key, ErrNotFound, err)
		}
		return nil, nil, fmt.Errorf("get %s: %w", key, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", key, err)
	}
	return body, out.Metadata, nil
}

// writerMeta is the user metadata key naming the sink that wrote a chunk.
const writerMeta = "baton-writer"

// putNew writes body at key only if nothing is there yet, tagged with
// writer unless it is empty. A taken key is reported with taken true and a
// nil error; so is a key found to exist after a transient error, which may
// be this very write whose answer was lost.
func (s *Store) putNew(ctx context.Context, key string, body []byte, writer string) (taken bool, err error) {
	var meta map[string]string
	if writer != "" {
		meta = map[string]string{writerMeta: writer}
	}
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Metadata:      meta,
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
		ContentType:   aws.String("application/json"),
		IfNoneMatch:   aws.String("*"),
	})
	if err == nil {
		return false, nil
	}
	if conditionFailed(err) {
		return true, nil
	}
	if awsenv.Transient(err) && ctx.Err() == nil {
		// The write may have landed and its answer been lost: if the key
		// exists now, report it taken, and the caller reads it to see by
		// whom.
		if _, herr := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)}); herr == nil {
			return true, nil
		}
	}
	return false, err
}

// conditionFailed reports whether err is S3 refusing an If-None-Match
// write because the key exists (412 PreconditionFailed) or because a
// concurrent conditional write to it is in progress (409
// ConditionalRequestConflict).
func conditionFailed(err error) bool {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		switch re.HTTPStatusCode() {
		case http.StatusPreconditionFailed:
			return true
		case http.StatusConflict:
			return errorCode(err) == "ConditionalRequestConflict"
		}
	}
	c := errorCode(err)
	return c == "PreconditionFailed" || c == "ConditionalRequestConflict"
}

func errorCode(err error) string {
	var api interface{ ErrorCode() string }
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}
