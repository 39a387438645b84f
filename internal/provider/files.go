package provider

import (
	"fmt"
	"strings"

	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/pkg/conversation"
)

// FileData is the bytes of file block c, which the runner loads before a
// model call (internal/files); a block without them is an InvalidRequest.
func FileData(name string, i int, c conversation.Content) ([]byte, error) {
	if c.File == nil || c.Data == nil {
		return nil, &model.Error{Kind: model.InvalidRequest, Err: fmt.Errorf("%s: message %d: a file block without its bytes loaded", name, i)}
	}
	return c.Data, nil
}

// IsImage reports whether media type mt is an image's.
func IsImage(mt string) bool { return strings.HasPrefix(mt, "image/") }

// FileName is a name for file block c that every provider's document
// name rules accept: the file's name of letters, digits, spaces, '-',
// '(', ')', '[' and ']' only (others become '-'), or "file" and the start
// of its digest.
func FileName(c conversation.Content) string {
	name := c.File.Name
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		name = name[:i]
	}
	var b strings.Builder
	space := false
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("-()[]", r):
			b.WriteRune(r)
			space = false
		case r == ' ' && !space && b.Len() > 0:
			b.WriteRune(r)
			space = true
		default:
			b.WriteByte('-')
			space = false
		}
	}
	out := strings.TrimSpace(b.String())
	if out == "" || len(out) > 200 {
		return "file-" + c.File.SHA256[:min(12, len(c.File.SHA256))]
	}
	return out
}
