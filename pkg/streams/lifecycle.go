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

// DeleteSession deletes every object of session: its turn streams' chunks
// and its snapshots. It returns how many it deleted; deleting what is gone
// is no error, so a delete cut short is finished by running it again.
func (s *Store) DeleteSession(ctx context.Context, session string) (int, error) {
	if err := checkID("session", session); err != nil {
		return 0, fmt.Errorf("streams: delete %s: %w", session, err)
	}
	n := 0
	for _, prefix := range []string{sessionPrefix(session), snapshotPrefix(session)} {
		keys, err := s.listKeys(ctx, prefix, "", 0)
		if err != nil {
			return n, fmt.Errorf("streams: delete %s: %w", session, err)
		}
		for _, k := range keys {
			if err := s.DeleteObject(ctx, k); err != nil {
				return n, fmt.Errorf("streams: delete %s: %w", session, err)
			}
			n++
		}
	}
	return n, nil
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
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(snapshotRoot)}
	for {
		out, err := s.client.ListObjectsV2(ctx, in)
		if err != nil {
			return fmt.Errorf("streams: list snapshots: %w", err)
		}
		for _, o := range out.Contents {
			key := aws.ToString(o.Key)
			session, _, ok := strings.Cut(strings.TrimPrefix(key, snapshotRoot), "/")
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
