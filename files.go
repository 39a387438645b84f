package baton

import (
	"encoding/json"

	"github.com/baton-run/baton/internal/files/spec"
)

// ToolFile is a file a tool returns (a screenshot, a generated chart):
// its media type, name and bytes.
type ToolFile = spec.ToolFile

// WithFiles is a tool's output that carries files besides output (any
// JSON value, nil for none): return it from a tool's Run (or a Func's
// function, as its json.RawMessage result). The runner stores the files
// in S3, as a message's, checked against the agent's Files policy; the
// recorded output names them ({"baton.files": [references], "output":
// output}); the model gets them natively (Anthropic and Bedrock inside
// the tool result, OpenAI in a user message after the tool messages); and
// the chat shows them as file parts. A file the policy refuses makes the
// call an error the model sees.
func WithFiles(output any, fs ...ToolFile) (json.RawMessage, error) {
	return spec.ToolOutput(output, fs...)
}
