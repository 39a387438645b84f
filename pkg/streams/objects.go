package streams

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

const snapshotRoot = "snapshots/"

func snapshotPrefix(session string) string { return snapshotRoot + session + "/" }

// filePrefix is where the session's files are (internal/files keeps them
// in the stream bucket, files/<session>/<sha256>).
func filePrefix(session string) string { return "files/" + session + "/" }

// Object is one object a session stored: a chunk of one of its turn
// streams, or one of its snapshots.
type Object struct {
	Key string
	// Stream is the turn stream the object is a chunk of; empty for a
	// snapshot or a file.
	Stream string
}

// SessionObjects lists every object of session: its turn streams' chunks,
// then its snapshots, then its files, each in key order.
func (s *Store) SessionObjects(ctx context.Context, session string) ([]Object, error) {
	if err := checkID("session", session); err != nil {
		return nil, fmt.Errorf("streams: list the objects of %s: %w", session, err)
	}
	var out []Object
	for _, prefix := range []string{sessionPrefix(session), snapshotPrefix(session), filePrefix(session)} {
		keys, err := s.listKeys(ctx, prefix, "", 0)
		if err != nil {
			return nil, fmt.Errorf("streams: list the objects of %s: %w", session, err)
		}
		for _, k := range keys {
			o := Object{Key: k}
			if prefix == sessionPrefix(session) {
				o.Stream, _, _ = strings.Cut(strings.TrimPrefix(k, prefix), "/")
			}
			out = append(out, o)
		}
	}
	return out, nil
}

// DeleteObject deletes the object at key (gone already is no error).
func (s *Store) DeleteObject(ctx context.Context, key string) error {
	if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)}); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// SnapshotObject is one stored snapshot: its key, its session, and when it
// was written.
type SnapshotObject struct {
	Key, Session string
	Modified     time.Time
}

// Snapshots calls fn with every snapshot in the bucket, in key order (so a
// session's snapshots come together), one ListObjectsV2 request per 1000.
func (s *Store) Snapshots(ctx context.Context, fn func(SnapshotObject) error) error {
	return s.listRoot(ctx, snapshotRoot, fn)
}

// Files calls fn with every file in the bucket (internal/files keeps them
// under files/<session>/), in key order, one ListObjectsV2 request per
// 1000.
func (s *Store) Files(ctx context.Context, fn func(SnapshotObject) error) error {
	return s.listRoot(ctx, "files/", fn)
}

// listRoot calls fn with every object under root/<session>/.
func (s *Store) listRoot(ctx context.Context, root string, fn func(SnapshotObject) error) error {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(root)}
	for {
		out, err := s.client.ListObjectsV2(ctx, in)
		if err != nil {
			return fmt.Errorf("streams: list %s: %w", root, err)
		}
		for _, o := range out.Contents {
			key := aws.ToString(o.Key)
			session, _, ok := strings.Cut(strings.TrimPrefix(key, root), "/")
			if !ok {
				continue
			}
			if err := fn(SnapshotObject{Key: key, Session: session, Modified: aws.ToTime(o.LastModified)}); err != nil {
				return err
			}
		}
		if !aws.ToBool(out.IsTruncated) || aws.ToString(out.NextContinuationToken) == "" {
			return nil
		}
		in.ContinuationToken = out.NextContinuationToken
	}
}
