package lifecycle

import (
	"context"
	"fmt"
	"slices"

	"github.com/baton-run/baton/pkg/streams"
)

// deleteObjects deletes every object of session: its turn streams' chunks
// and its snapshots, but for the last chunk of each stream named in fenced.
// That chunk is a fence: a writer of the stream that has not yet learnt
// its turn ended (a cancel closed the stream under it) finds its next
// chunk taken by it and stops, where without it its write would land
// again. A writer never writes below its next chunk, so the chunks before
// the fence go. It returns how many objects it deleted; deleting what is
// gone is no error, so a delete cut short is finished by running it again.
func (s *Lifecycle) deleteObjects(ctx context.Context, session string, fenced []string) (int, error) {
	objs, err := s.objects.SessionObjects(ctx, session)
	if err != nil {
		return 0, fmt.Errorf("lifecycle: delete the objects of %s: %w", session, err)
	}
	fences := lastChunks(objs, fenced)
	n := 0
	for _, o := range objs {
		if fences[o.Key] {
			continue
		}
		if err := s.objects.DeleteObject(ctx, o.Key); err != nil {
			return n, fmt.Errorf("lifecycle: delete the objects of %s: %w", session, err)
		}
		n++
	}
	return n, nil
}

// lastChunks is the set of the keys of the last chunk of each stream in
// fenced, among objs.
func lastChunks(objs []streams.Object, fenced []string) map[string]bool {
	if len(fenced) == 0 {
		return nil
	}
	last := map[string]string{}
	for _, o := range objs {
		if o.Stream != "" && slices.Contains(fenced, o.Stream) && o.Key > last[o.Stream] {
			last[o.Stream] = o.Key
		}
	}
	out := make(map[string]bool, len(last))
	for _, k := range last {
		out[k] = true
	}
	return out
}
