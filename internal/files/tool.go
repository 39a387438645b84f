package files

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/baton-run/baton/internal/files/spec"
	"github.com/baton-run/baton/pkg/conversation"
	"github.com/baton-run/baton/pkg/reducer"
)

// ToolKey is the key of the files in a tool's output that carries some
// (spec.ToolKey): {"baton.files": [ToolFile…], "output": …} as the tool
// returns it, {"baton.files": [reducer.File…], "output": …} as recorded.
const ToolKey = spec.ToolKey

// ToolFile is a file a tool returns (spec.ToolFile).
type ToolFile = spec.ToolFile

// ToolOutput is a tool's output that carries files besides output.
func ToolOutput(output any, fs ...ToolFile) (json.RawMessage, error) {
	return spec.ToolOutput(output, fs...)
}

// envelope is a tool output with files, as the tool returns it (Data set)
// or as recorded (references).
type envelope struct {
	Files  []json.RawMessage `json:"baton.files"`
	Output json.RawMessage   `json:"output"`
}

func parseEnvelope(out json.RawMessage) (envelope, bool) {
	var e envelope
	if !bytes.Contains(out, []byte(`"`+ToolKey+`"`)) || json.Unmarshal(out, &e) != nil || e.Files == nil {
		return envelope{}, false
	}
	if len(e.Output) == 0 {
		e.Output = json.RawMessage(`null`)
	}
	return e, true
}

// StoreToolOutput stores the files of a tool's output in session, checked
// against p (a file refused is an *Error, which the runner gives the
// model as the call's error), and returns the output to record, which
// names them. An output without files is returned as it is.
func (s *Store) StoreToolOutput(ctx context.Context, session string, p Policy, out json.RawMessage) (json.RawMessage, error) {
	e, ok := parseEnvelope(out)
	if !ok {
		return out, nil
	}
	p = p.Resolved()
	if err := checkCount(p, len(e.Files)); err != nil {
		return nil, err
	}
	refs := make([]reducer.File, len(e.Files))
	for i, raw := range e.Files {
		var f ToolFile
		if err := json.Unmarshal(raw, &f); err != nil || f.Data == nil {
			return nil, refuse(BadFile, fmt.Sprint(i+1), "a tool's file must be {mediaType, filename, data (base64)}")
		}
		name := Input{Name: f.Name}.label(i)
		if err := checkDeclared(p, name, f.MediaType, int64(len(f.Data))); err != nil {
			return nil, err
		}
		if err := sniff(name, f.MediaType, f.Data[:min(len(f.Data), 512)]); err != nil {
			return nil, err
		}
		sum := sha256.Sum256(f.Data)
		sha := hex.EncodeToString(sum[:])
		refs[i] = reducer.File{Key: Key(session, sha), MediaType: f.MediaType, Size: int64(len(f.Data)), SHA256: sha, Name: f.Name}
		if _, err := s.put(ctx, refs[i], f.Data); err != nil {
			return nil, err
		}
	}
	rec, err := json.Marshal(struct {
		Files  []reducer.File  `json:"baton.files"`
		Output json.RawMessage `json:"output"`
	}{refs, e.Output})
	if err != nil {
		return nil, fmt.Errorf("files: tool output: %w", err)
	}
	return rec, nil
}

// ToolFiles splits a recorded tool output into the output and the
// references of its files; ok is false for an output without files.
func ToolFiles(out json.RawMessage) (json.RawMessage, []reducer.File, bool) {
	e, ok := parseEnvelope(out)
	if !ok {
		return out, nil, false
	}
	refs := make([]reducer.File, 0, len(e.Files))
	for _, raw := range e.Files {
		var f reducer.File
		if json.Unmarshal(raw, &f) != nil || !validSHA(f.SHA256) {
			return out, nil, false
		}
		refs = append(refs, f)
	}
	return e.Output, refs, true
}

// recorded is how every recorded tool output with files begins: the
// runner records only what StoreToolOutput marshals, whose first key is
// ToolKey.
var recorded = []byte(`{"` + ToolKey + `":`)

// HasFiles reports whether msgs hold a file block or a tool result with
// files: what Load has to load. The runner asks before every model call,
// over the whole conversation, so it looks at a tool result's first bytes
// only (recorded), not its whole output.
func HasFiles(msgs []conversation.Message) bool {
	for _, m := range msgs {
		for _, c := range m.Content {
			if c.Type == conversation.File || (c.Type == conversation.ToolResult && bytes.HasPrefix(c.Output, recorded)) {
				return true
			}
		}
	}
	return false
}
