package agents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// duplicate finds the first object member that appears twice in its object
// of the JSON document data, anywhere in it, and returns its path: object
// members by name, array elements as "[i]" ("agents", "a", "limits",
// "budget"). encoding/json lets the last of two members win, which would
// let a file say two things and mean one. It returns nil when there is
// none, or when data is not JSON (decoding reports that).
func duplicate(data []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	path, _ := dupValue(dec, nil)
	return path
}

// dupValue reads one value from dec, at path, and returns the path of the
// first duplicate member in it; ok is false when the value did not read.
func dupValue(dec *json.Decoder, path []string) (dup []string, ok bool) {
	tok, err := dec.Token()
	if err != nil {
		return nil, false
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			name, isName := k.(string)
			if err != nil || !isName {
				return nil, false
			}
			at := append(path[:len(path):len(path)], name)
			if seen[name] {
				return at, true
			}
			seen[name] = true
			if dup, ok := dupValue(dec, at); dup != nil || !ok {
				return dup, ok
			}
		}
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			at := append(path[:len(path):len(path)], fmt.Sprintf("[%d]", i))
			if dup, ok := dupValue(dec, at); dup != nil || !ok {
				return dup, ok
			}
		}
	default:
		return nil, true
	}
	_, err = dec.Token() // the closing delimiter
	return nil, err == nil
}

// fieldPath joins a path below an agent as ConfigError.Field names fields:
// "limits.budget", "tools[1].name".
func fieldPath(path []string) string {
	var b strings.Builder
	for _, p := range path {
		if b.Len() > 0 && !strings.HasPrefix(p, "[") {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

// duplicateError is the ConfigError of the duplicate member at path in
// file name.
func duplicateError(name string, path []string) *ConfigError {
	err := fmt.Errorf("parse: member %q appears twice in its object: the file may say each thing once", path[len(path)-1])
	switch {
	case len(path) >= 3 && path[0] == "agents":
		return &ConfigError{File: name, Agent: path[1], Field: fieldPath(path[2:]), Err: err}
	case len(path) == 2 && path[0] == "agents":
		return &ConfigError{File: name, Agent: path[1], Err: fmt.Errorf("parse: agent %q is defined twice", path[1])}
	}
	return &ConfigError{File: name, Field: fieldPath(path), Err: err}
}
