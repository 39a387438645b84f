package session

import (
	"context"
	"slices"

	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

// This file holds StreamUsage: the usage of a turn's billed steps, read
// back from its stream.

// MaxUsageChunks bounds the chunks of a turn's stream StreamUsage reads
// back: to the latest step's metadata, or over the whole stream when its
// steps do not say the turn's usage (streams written before they did).
const MaxUsageChunks = 64

// StreamUsage is the usage of a turn stream's billed steps, as the stream
// holds them: the turn usage its latest kept step's metadata says, read
// back from the stream's end (one ListObjectsV2 and usually one
// GetObject, however long the turn), or, for a stream whose steps do not
// say it, their sum when the stream is short enough to read whole. A
// stream with no completed step has zero usage. ok is false when the
// stream could not be read, or holds no step's metadata in its last
// MaxUsageChunks chunks.
func (s *stores) StreamUsage(ctx context.Context, id, stream string) (u reducer.Usage, ok bool, err error) {
	var (
		newest  []parts.Part // the parts read, newest first
		found   bool
		dropped bool // in a step marked abandoned, read backwards
	)
	whole, err := s.streams.ReadBack(ctx, id, stream, MaxUsageChunks, func(p parts.Part) bool {
		newest = append(newest, p)
		switch p.Type {
		case parts.DataAbandoned:
			dropped = true
		case parts.StartStep:
			dropped = false
		case parts.MessageMetadata:
			if !dropped {
				u, found = conversation.TurnUsage(p)
			}
		}
		return !found
	})
	switch {
	case err != nil:
		return reducer.Usage{}, false, err
	case found:
		return u, true, nil
	case whole:
		// No step says the turn's usage (an older stream) or there is no
		// step yet: sum the steps.
		slices.Reverse(newest)
		return conversation.Replay(newest).Usage(), true, nil
	}
	return reducer.Usage{}, false, nil
}
