package streams

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/baton-run/baton/internal/parts"
)

// Cursor names the last part a reader already has: "<chunk>.<part>", both
// decimal indices from 0. The empty Cursor means the beginning.
type Cursor string

// CursorAt returns the cursor naming part part of chunk chunk.
func CursorAt(chunk, part int) Cursor {
	return Cursor(strconv.Itoa(chunk) + "." + strconv.Itoa(part))
}

// maxPartIndex bounds a cursor's part index; no chunk holds that many.
const maxPartIndex = 1<<31 - 1

// ParseCursor parses s as a cursor. The empty string is the beginning;
// anything else must be "<chunk>.<part>" in canonical decimal (no signs,
// spaces or leading zeros). A malformed cursor is reported with an error
// wrapping ErrBadCursor.
func ParseCursor(s string) (Cursor, error) {
	if _, _, err := Cursor(s).position(); err != nil {
		return "", err
	}
	return Cursor(s), nil
}

// position returns the chunk and part the cursor names; -1, -1 for the
// beginning.
func (c Cursor) position() (chunk, part int, err error) {
	if c == "" {
		return -1, -1, nil
	}
	cs, ps, ok := strings.Cut(string(c), ".")
	if !ok {
		return 0, 0, fmt.Errorf("%w %q: want <chunk>.<part>", ErrBadCursor, string(c))
	}
	chunk, err = parseIndex(cs, maxChunks-1)
	if err != nil {
		return 0, 0, fmt.Errorf("%w %q: chunk: %v", ErrBadCursor, string(c), err)
	}
	part, err = parseIndex(ps, maxPartIndex)
	if err != nil {
		return 0, 0, fmt.Errorf("%w %q: part: %v", ErrBadCursor, string(c), err)
	}
	return chunk, part, nil
}

func parseIndex(s string, limit int) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("empty index")
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, fmt.Errorf("leading zero in %q", s)
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not a decimal index", s)
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > limit {
		return 0, fmt.Errorf("index %s out of range", s)
	}
	return n, nil
}

// Entry is one part and the cursor that names it.
type Entry struct {
	Cursor Cursor     `json:"cursor"`
	Part   parts.Part `json:"part"`
}

// Page is what Read returns.
type Page struct {
	Entries []Entry `json:"entries"`
	// Cursor names the last part delivered, or is the input cursor when
	// nothing new was.
	Cursor Cursor `json:"cursor"`
	// Closed is how the stream was closed, or Open.
	Closed Status `json:"closed,omitempty"`
	// More reports that ReadChunks stopped at its limit: the stream has
	// chunks after the ones read. Read from Cursor for the rest.
	More bool `json:"more,omitempty"`
}

// Read returns the parts of a stream strictly after cursor after, in order
// across all chunks. It lists only the chunks from the cursor's on (with
// StartAfter; on Express it finds them by index, without listing) and
// reads each with one GetObject. A stream with no chunks
// gives an empty page. A cursor that names no stored part is refused with
// ErrBadCursor.
func (s *Store) Read(ctx context.Context, session, stream string, after Cursor) (Page, error) {
	return s.ReadChunks(ctx, session, stream, after, 0)
}

// ReadChunks is Read over at most maxChunks chunks (all of them when
// maxChunks is not positive), counting the cursor's: one ListObjectsV2 and
// at most maxChunks GetObject requests when maxChunks is under 1000 (on
// Express, no listing and at most maxChunks+1 GetObjects). A page cut
// short says More.
func (s *Store) ReadChunks(ctx context.Context, session, stream string, after Cursor, maxChunks int) (Page, error) {
	fail := func(err error) (Page, error) {
		return Page{}, fmt.Errorf("streams: read %s/%s after %q: %w", session, stream, string(after), err)
	}
	if err := checkID("session", session); err != nil {
		return fail(err)
	}
	if err := checkID("stream", stream); err != nil {
		return fail(err)
	}
	chunk, part, err := after.position()
	if err != nil {
		return fail(err)
	}
	first := max(chunk, 0)
	docs, more, err := s.chunksFrom(ctx, session, stream, first, maxChunks)
	if err != nil {
		return fail(err)
	}
	if chunk >= 0 && len(docs) == 0 {
		return fail(fmt.Errorf("%w: no chunk %d", ErrBadCursor, chunk))
	}
	page := Page{Entries: []Entry{}, Cursor: after, More: more}
	for i, d := range docs {
		n := first + i
		if d.Closed != Open && (i != len(docs)-1 || more) {
			return fail(fmt.Errorf("%w: chunk %d follows the closing chunk %d", ErrCorrupt, n+1, n))
		}
		from := 0
		if n == chunk {
			if part >= len(d.Parts) {
				return fail(fmt.Errorf("%w: chunk %d has %d parts", ErrBadCursor, chunk, len(d.Parts)))
			}
			from = part + 1
		}
		for j := from; j < len(d.Parts); j++ {
			page.Entries = append(page.Entries, Entry{Cursor: CursorAt(n, j), Part: d.Parts[j]})
		}
		page.Closed = d.Closed
	}
	if l := len(page.Entries); l > 0 {
		page.Cursor = page.Entries[l-1].Cursor
	}
	return page, nil
}

// ReadBack visits the parts of a stream's last chunks chunks newest first,
// until visit returns false. It lists the stream once and reads its chunks
// from the last back, one, then two, then four at a time, so a reader that
// stops in the last chunk costs one ListObjectsV2 (per 1000 chunks) and one
// GetObject. whole reports that visit saw every part of the stream.
func (s *Store) ReadBack(ctx context.Context, session, stream string, chunks int, visit func(parts.Part) bool) (whole bool, err error) {
	fail := func(err error) (bool, error) {
		return false, fmt.Errorf("streams: read %s/%s back: %w", session, stream, err)
	}
	if err := checkID("session", session); err != nil {
		return fail(err)
	}
	if err := checkID("stream", stream); err != nil {
		return fail(err)
	}
	if chunks < 1 {
		return fail(fmt.Errorf("%d chunks: want at least one", chunks))
	}
	keys, err := s.listChunks(ctx, session, stream, 0, 0)
	if err != nil {
		return fail(err)
	}
	first := len(keys) - min(chunks, len(keys)) // the oldest chunk to read
	for end, batch := len(keys), 1; end > first; end, batch = end-batch, batch*2 {
		from := max(end-batch, first)
		docs, err := s.getChunks(ctx, keys[from:end])
		if err != nil {
			return fail(err)
		}
		for i := len(docs) - 1; i >= 0; i-- {
			if n := from + i; docs[i].Closed != Open && n != len(keys)-1 {
				return fail(fmt.Errorf("%w: chunk %d follows the closing chunk %d", ErrCorrupt, n+1, n))
			}
			for j := len(docs[i].Parts) - 1; j >= 0; j-- {
				if !visit(docs[i].Parts[j]) {
					return false, nil
				}
			}
		}
	}
	return first == 0, nil
}

// Info describes a stored stream.
type Info struct {
	ID     string
	Chunks int
	Closed Status
}

// Streams lists every stream of a session that has at least one chunk, in
// key order, with its chunk count and close status. It costs one
// ListObjectsV2 per 1000 chunks of the session and one GetObject per
// stream (its last chunk).
func (s *Store) Streams(ctx context.Context, session string) ([]Info, error) {
	fail := func(err error) ([]Info, error) {
		return nil, fmt.Errorf("streams: list streams of %s: %w", session, err)
	}
	if err := checkID("session", session); err != nil {
		return fail(err)
	}
	prefix := sessionPrefix(session)
	keys, err := s.listKeys(ctx, prefix, "", 0)
	if err != nil {
		return fail(err)
	}
	var infos []Info
	var last []string
	for _, key := range keys {
		id, name, ok := strings.Cut(strings.TrimPrefix(key, prefix), "/")
		n, isChunk := parseChunkName(name)
		if !ok || !isChunk {
			return fail(fmt.Errorf("%w: unexpected object %s", ErrCorrupt, key))
		}
		if len(infos) == 0 || infos[len(infos)-1].ID != id {
			infos = append(infos, Info{ID: id})
			last = append(last, "")
		}
		in := &infos[len(infos)-1]
		if n != in.Chunks {
			return fail(fmt.Errorf("%w: chunk %d missing before %s", ErrCorrupt, in.Chunks, key))
		}
		in.Chunks++
		last[len(last)-1] = key
	}
	docs, err := s.getChunks(ctx, last)
	if err != nil {
		return fail(err)
	}
	for i := range infos {
		infos[i].Closed = docs[i].Closed
	}
	return infos, nil
}
