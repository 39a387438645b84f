package streams

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/baton-run/baton/internal/parts"
)

// parseChunk decodes the body of the chunk object at key. A body that is
// not one the sink writes (a JSON object with a parts array of typed parts
// and, on the last chunk, a known close status) is refused with an error
// wrapping ErrCorrupt.
func parseChunk(key string, body []byte) (chunkDoc, error) {
	corrupt := func(format string, args ...any) (chunkDoc, error) {
		return chunkDoc{}, fmt.Errorf("%w: chunk %s: %s", ErrCorrupt, key, fmt.Sprintf(format, args...))
	}
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) == 0 || b[0] != '{' {
		return corrupt("not a JSON object")
	}
	var doc struct {
		Parts  *[]parts.Part `json:"parts"`
		Closed Status        `json:"closed"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return corrupt("decode: %v", err)
	}
	if doc.Parts == nil {
		return corrupt("no parts array")
	}
	for i, p := range *doc.Parts {
		if p.Type == "" {
			return corrupt("part %d has no type", i)
		}
	}
	switch doc.Closed {
	case Open, Completed, Failed, Cancelled, Interrupted, Aborted:
	default:
		return corrupt("unknown close status %q", doc.Closed)
	}
	return chunkDoc{Parts: *doc.Parts, Closed: doc.Closed}, nil
}
