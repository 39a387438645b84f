package spec

import (
	"encoding/json"
	"fmt"
	"mime"
	"slices"
	"strings"
)

// Defaults of a Policy's zero fields.
const (
	// DefaultMaxBytes is the largest file an agent accepts unless it says
	// otherwise: 20 MB.
	DefaultMaxBytes = 20 << 20
	// DefaultMaxFiles is how many files a message may carry.
	DefaultMaxFiles = 5
)

// DefaultTypes are the media types an agent accepts unless it says
// otherwise: the images every provider takes, and PDF.
var DefaultTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"}

// Policy is what an agent accepts in a message's files. Its zero value is
// the safe default: DefaultTypes, DefaultMaxBytes, DefaultMaxFiles, and no
// fetching of URLs.
type Policy struct {
	// Types are the accepted media types ("image/png"); "image/*" accepts
	// every image type. Empty is DefaultTypes.
	Types []string `json:"types,omitempty"`
	// MaxBytes is the largest file accepted; 0 is DefaultMaxBytes.
	MaxBytes int64 `json:"maxBytes,omitempty"`
	// MaxFiles is how many files one message may carry; 0 is
	// DefaultMaxFiles, and a negative value accepts none.
	MaxFiles int `json:"maxFiles,omitempty"`
	// FetchURLs lets a message name a file by an https URL, which baton
	// fetches (from a public address only).
	FetchURLs bool `json:"fetchURLs,omitempty"`
}

// Resolved is p with its defaults filled in.
func (p Policy) Resolved() Policy {
	if len(p.Types) == 0 {
		p.Types = DefaultTypes
	}
	if p.MaxBytes <= 0 {
		p.MaxBytes = DefaultMaxBytes
	}
	if p.MaxFiles == 0 {
		p.MaxFiles = DefaultMaxFiles
	}
	return p
}

// Check reports what is wrong with p as an agent declared it.
func (p Policy) Check() error {
	for _, t := range p.Types {
		if mt, _, err := mime.ParseMediaType(t); err != nil || mt != strings.ToLower(t) || !strings.Contains(t, "/") {
			return fmt.Errorf("files: type %q is not a media type such as image/png or image/*", t)
		}
	}
	if p.MaxBytes < 0 {
		return fmt.Errorf("files: maxBytes %d is negative", p.MaxBytes)
	}
	return nil
}

// Accepts reports whether p accepts media type mt.
func (p Policy) Accepts(mt string) bool {
	p = p.Resolved()
	return slices.ContainsFunc(p.Types, func(t string) bool {
		if prefix, ok := strings.CutSuffix(t, "/*"); ok {
			return strings.HasPrefix(mt, prefix+"/")
		}
		return t == mt
	})
}

// ToolKey is the key of the files in a tool's output that carries some:
// {"baton.files": [ToolFile…], "output": <the output>}. The runner stores
// them before the output is recorded, so the recorded output holds their
// references and never their bytes.
const ToolKey = "baton.files"

// ToolFile is a file a tool returns: a screenshot, a chart.
type ToolFile struct {
	MediaType string `json:"mediaType"`
	Name      string `json:"filename,omitempty"`
	Data      []byte `json:"data"`
}

// ToolOutput is a tool's output that carries files besides output (any
// JSON value; nil for none).
func ToolOutput(output any, fs ...ToolFile) (json.RawMessage, error) {
	out, err := json.Marshal(output)
	if err != nil {
		return nil, fmt.Errorf("files: tool output: %w", err)
	}
	return json.Marshal(map[string]any{ToolKey: fs, "output": json.RawMessage(out)})
}
