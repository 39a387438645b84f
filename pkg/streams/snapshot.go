package streams

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// SnapshotKey returns a fresh key for a snapshot of session taken at fact
// seq: snapshots/<session>/<seq %012d>-<16 random hex digits>.json. Every
// call returns a different key, so racing writers never overwrite each
// other, and a session's keys sort by seq.
func SnapshotKey(session string, seq int64) string {
	var b [8]byte
	// crypto/rand.Read never returns an error (Go 1.24+ crashes instead).
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("snapshots/%s/%012d-%s.json", session, seq, hex.EncodeToString(b[:]))
}

// PutSnapshot stores v as JSON at key, which must not exist yet (an error
// wrapping ErrExists says it does, unless it holds the same JSON: a write
// whose answer was lost and which was retried).
func (s *Store) PutSnapshot(ctx context.Context, key string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("streams: put snapshot %s: encode: %w", key, err)
	}
	taken, err := s.putNew(ctx, key, body, "")
	if err != nil {
		return fmt.Errorf("streams: put snapshot %s: %w", key, err)
	}
	if taken {
		// The key is taken; if by this very body, an earlier attempt whose
		// answer was lost (and which the SDK retried) landed.
		stored, err := s.getObject(ctx, key)
		if err != nil {
			return fmt.Errorf("streams: put snapshot %s: taken; read it back: %w", key, err)
		}
		if !bytes.Equal(stored, body) {
			return fmt.Errorf("streams: put snapshot %s: %w", key, ErrExists)
		}
	}
	return nil
}

// GetSnapshot reads the JSON snapshot at key into v. A missing snapshot is
// reported with an error wrapping ErrNotFound.
func (s *Store) GetSnapshot(ctx context.Context, key string, v any) error {
	body, err := s.getObject(ctx, key)
	if err != nil {
		return fmt.Errorf("streams: get snapshot: %w", err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("streams: get snapshot %s: decode: %w", key, err)
	}
	return nil
}
