package files

import (
	"context"
	"fmt"
	"slices"

	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
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
			change := func() *conversation.Content {
				if out == nil {
					out = slices.Clone(msgs)
				}
				if &out[i].Content[0] == &msgs[i].Content[0] {
					out[i].Content = slices.Clone(m.Content)
				}
				return &out[i].Content[j]
			}
			switch {
			case c.Type == conversation.File && c.File != nil && c.Data == nil:
				data, err := l.read(ctx, *c.File)
				if err != nil {
					return nil, err
				}
				change().Data = data
			case c.Type == conversation.ToolResult && c.Attached == nil:
				output, refs, ok := ToolFiles(c.Output)
				if !ok {
					continue
				}
				att := make([]conversation.Attachment, len(refs))
				for k, f := range refs {
					data, err := l.read(ctx, f)
					if err != nil {
						return nil, err
					}
					att[k] = conversation.Attachment{File: f, Data: data}
				}
				cc := change()
				cc.Output, cc.Attached = output, att
			}
		}
	}
	if out == nil {
		return msgs, nil
	}
	return out, nil
}

// read is file f's bytes, read once per digest.
func (l *Loader) read(ctx context.Context, f reducer.File) ([]byte, error) {
	if data, ok := l.cache[f.SHA256]; ok {
		return data, nil
	}
	data, err := l.store.Read(ctx, l.session, f)
	if err != nil {
		return nil, fmt.Errorf("files: load %s for the model: %w", f.SHA256, err)
	}
	l.cache[f.SHA256] = data
	return data, nil
}
