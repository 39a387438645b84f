package files

import (
	"context"
	"fmt"
	"slices"

	"github.com/baton-run/baton/pkg/conversation"
)

// Loader loads the bytes of a session's files into model inputs, keeping
// what it read for the next step of the same invocation. It is not safe
// for concurrent use; a runner makes one per invocation.
type Loader struct {
	store   *Store
	session string
	cache   map[string][]byte
}

// Loader is a Loader of session's files.
func (s *Store) Loader(session string) *Loader {
	return &Loader{store: s, session: session, cache: map[string][]byte{}}
}

// Load returns msgs with each file block's Data set, copying the messages
// it changes (msgs itself is left as it is: a Replayer shares it). A file
// that cannot be read fails the load.
func (l *Loader) Load(ctx context.Context, msgs []conversation.Message) ([]conversation.Message, error) {
	var out []conversation.Message
	for i, m := range msgs {
		for j, c := range m.Content {
			if c.Type != conversation.File || c.File == nil || c.Data != nil {
				continue
			}
			data, ok := l.cache[c.File.SHA256]
			if !ok {
				var err error
				if data, err = l.store.Read(ctx, l.session, *c.File); err != nil {
					return nil, fmt.Errorf("files: load %s for the model: %w", c.File.SHA256, err)
				}
				l.cache[c.File.SHA256] = data
			}
			if out == nil {
				out = slices.Clone(msgs)
			}
			if &out[i].Content[0] == &msgs[i].Content[0] {
				out[i].Content = slices.Clone(m.Content)
			}
			out[i].Content[j].Data = data
		}
	}
	if out == nil {
		return msgs, nil
	}
	return out, nil
}
