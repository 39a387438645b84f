package streams

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

const snapshotRoot = "snapshots/"

func snapshotPrefix(session string) string { return snapshotRoot + session + "/" }

// DeleteSession deletes every object of session: its turn streams' chunks
// and its snapshots, but for the last chunk of each stream named in fenced.
// That chunk is a fence: a writer of the stream that has not yet learnt
// its turn ended (a cancel closed the stream under it) finds its next
// chunk taken by it and stops, where without it its write would land
// again. A writer never writes below its next chunk, so the chunks before
// the fence go. It returns how many objects it deleted; deleting what is
// gone is no error, so a delete cut short is finished by running it again.
func (s *Store) DeleteSession(ctx context.Context, session string, fenced ...string) (int, error) {
	if err := checkID("session", session); err != nil {
		return 0, fmt.Errorf("streams: delete %s: %w", session, err)
	}
	n := 0
	for _, prefix := range []string{sessionPrefix(session), snapshotPrefix(session)} {
		keys, err := s.listKeys(ctx, prefix, "", 0)
		if err != nil {
			return n, fmt.Errorf("streams: delete %s: %w", session, err)
		}
		fences := lastChunks(keys, prefix, fenced)
		for _, k := range keys {
			if fences[k] {
				continue
			}
			if err := s.DeleteObject(ctx, k); err != nil {
				return n, fmt.Errorf("streams: delete %s: %w", session, err)
			}
			n++
		}
	}
	return n, nil
}

// lastChunks is the set of the last keys (sorted keys under prefix,
// prefix + stream + "/" + chunk name) of each stream in streams.
func lastChunks(keys []string, prefix string, streams []string) map[string]bool {
	if len(streams) == 0 {
		return nil
	}
	last := map[string]string{}
	for _, k := range keys {
		stream, _, ok := strings.Cut(strings.TrimPrefix(k, prefix), "/")
		if ok && slices.Contains(streams, stream) && k > last[stream] {
			last[stream] = k
		}
	}
	out := make(map[string]bool, len(last))
	for _, k := range last {
		out[k] = true
	}
	return out
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
