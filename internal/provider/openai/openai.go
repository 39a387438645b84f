package openai

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strconv"
	"strings"

	sdk "github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/packages/param"
	"github.com/openai/openai-go/shared"

	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/provider"
	"github.com/baton-run/baton/pkg/conversation"
)

const name = "openai"

// Config configures a Model.
type Config struct {
	// Model is the model name the server knows. Required.
	Model string
	// MaxTokens caps the output of a step when the request does not; 0
	// leaves it to the server.
	MaxTokens int
	// MaxCompletionTokens sends the cap as max_completion_tokens (OpenAI
	// reasoning models) instead of max_tokens (what most compatible servers
	// read).
	MaxCompletionTokens bool
	// APIKey is sent as a bearer token; empty falls back to OPENAI_API_KEY.
	APIKey string
	// BaseURL points at the server, e.g. "http://localhost:8000/v1" for vLLM
	// or "http://localhost:11434/v1" for Ollama.
	BaseURL string
	// ReasoningEffort is sent as reasoning_effort when set.
	ReasoningEffort string
	// EchoReasoning sends a step's reasoning back as reasoning_content on
	// assistant messages that made tool calls, as DeepSeek-style thinking
	// servers require. Off for api.openai.com, which has no such field.
	EchoReasoning bool
	// HTTPClient replaces the SDK's default HTTP client.
	HTTPClient *http.Client
	// Options are appended to the SDK client options.
	Options []option.RequestOption
}

// Model streams steps from a chat completions endpoint. It is safe for
// concurrent use.
type Model struct {
	cfg    Config
	client sdk.Client
}

var _ model.Model = (*Model)(nil)

// New returns a Model for cfg. The SDK's own retries are off: the turn
// runner redoes a failed step under the agent's model.RetryPolicy.
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("openai: config: model is required")
	}
	opts := sdkOptions.For(cfg.APIKey, cfg.BaseURL, cfg.HTTPClient, cfg.Options)
	return &Model{cfg: cfg, client: sdk.NewClient(opts...)}, nil
}

// sdkOptions are the SDK's spellings of the options every provider sets.
var sdkOptions = provider.SDKOptions[option.RequestOption]{
	NoRetries: option.WithMaxRetries(0), APIKey: option.WithAPIKey, BaseURL: option.WithBaseURL,
	HTTPClient: func(c *http.Client) option.RequestOption { return option.WithHTTPClient(c) },
}

// Stream implements model.Model.
func (m *Model) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		params, err := m.params(req)
		if err != nil {
			yield(model.Event{}, err)
			return
		}
		provider.Relay(ctx, name, m.client.Chat.Completions.NewStreaming(ctx, params), &state{}, failure, yield)
	}
}

// call is one tool call being streamed.
type call struct {
	index int64
	id    string
	name  string
	args  strings.Builder
}

// state folds the chunks of one step into model events.
type state struct {
	calls    []*call
	finished bool
	stop     model.StopReason
	usage    model.Usage
	out      []model.Event
}

// Fold implements provider.Folder: the step ends only with the stream
// (End), as its usage arrives in a chunk after the finish reason.
func (s *state) Fold(c *sdk.ChatCompletionChunk) ([]model.Event, bool, error) {
	return s.handle(c), false, nil
}

// End implements provider.Folder.
func (s *state) End() ([]model.Event, error) { return s.finish() }

func (s *state) handle(c *sdk.ChatCompletionChunk) []model.Event {
	s.out = s.out[:0]
	if c.JSON.Usage.Valid() {
		s.usage = model.Usage{InputTokens: c.Usage.PromptTokens, OutputTokens: c.Usage.CompletionTokens}
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue
		}
		d := &ch.Delta
		if r := reasoning(d); r != "" {
			s.out = append(s.out, model.Event{Type: model.ReasoningDelta, Text: r})
		}
		if d.Content != "" {
			s.out = append(s.out, model.Event{Type: model.TextDelta, Text: d.Content})
		}
		for j := range d.ToolCalls {
			tc := &d.ToolCalls[j]
			cl := s.call(tc.Index)
			if tc.ID != "" {
				cl.id = tc.ID
			}
			if tc.Function.Name != "" {
				cl.name = tc.Function.Name
			}
			cl.args.WriteString(tc.Function.Arguments)
		}
		if ch.FinishReason != "" && !s.finished {
			s.finished = true
			s.stop = finishReason(ch.FinishReason)
		}
	}
	return s.out
}

func (s *state) call(index int64) *call {
	for _, c := range s.calls {
		if c.index == index {
			return c
		}
	}
	c := &call{index: index}
	s.calls = append(s.calls, c)
	return c
}

// finish ends the step once the stream is over: the tool calls, whose
// arguments are now whole, in index order, then the finish event with the
// usage, which arrives in a chunk after the finish reason.
func (s *state) finish() ([]model.Event, error) {
	if !s.finished {
		return nil, provider.Truncated(name)
	}
	// Some servers (older Ollama) say "stop" when the step made tool calls.
	if len(s.calls) > 0 && s.stop == model.StopEnd {
		s.stop = model.StopToolCalls
	}
	slices.SortFunc(s.calls, func(a, b *call) int { return cmp.Compare(a.index, b.index) })
	evs := make([]model.Event, 0, len(s.calls)+1)
	for _, c := range s.calls {
		in, ok := provider.CallInput(c.args.String())
		if !ok {
			if s.stop == model.StopLength {
				continue // cut off by the token limit: no call to make
			}
			return nil, provider.BadToolInput(name, c.id+" ("+c.name+")")
		}
		// A call the server gave no id keeps none: the runner gives every
		// call baton's own id and a unique wire id.
		evs = append(evs, model.Event{Type: model.ToolCall, Call: model.Call{ID: c.id, Name: c.name, Input: in}})
	}
	return append(evs, model.Event{Type: model.Finish, Stop: s.stop, Usage: provider.ClampUsage(s.usage)}), nil
}

// reasoning reads the non-standard reasoning delta vLLM, DeepSeek and Ollama
// send as "reasoning_content" or "reasoning".
func reasoning(d *sdk.ChatCompletionChunkChoiceDelta) string {
	for _, k := range [...]string{"reasoning_content", "reasoning"} {
		f, ok := d.JSON.ExtraFields[k]
		if !ok {
			continue
		}
		raw := f.Raw()
		if raw == "" || raw == "null" {
			continue
		}
		var s string
		if json.Unmarshal([]byte(raw), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

func finishReason(r string) model.StopReason {
	switch r {
	case "stop":
		return model.StopEnd
	case "tool_calls", "function_call":
		return model.StopToolCalls
	case "length":
		return model.StopLength
	default:
		return model.StopOther
	}
}

// failure reads what the server reported from an SDK error.
func failure(err error) provider.Failure {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		f := provider.Failure{
			Status:  apiErr.StatusCode,
			Code:    apiErr.Code,
			Message: apiErr.Message,
			Err:     fmt.Errorf("openai: %w", err),
		}
		if f.Code == "" {
			f.Code = apiErr.Type
		}
		if apiErr.Response != nil {
			f.Header = apiErr.Response.Header
		}
		return f
	}
	// The SDK reports an error object inside the stream as plain text.
	const prefix = "received error while streaming: "
	if msg := err.Error(); strings.HasPrefix(msg, prefix) {
		return streamFailure(strings.TrimPrefix(msg, prefix), err)
	}
	return provider.Failure{Err: fmt.Errorf("openai: stream: %w", err)}
}

// streamFailure reads an in-stream error object such as
// {"message":"...","type":"server_error","code":null} (OpenAI) or
// {"object":"error","message":"...","type":"BadRequestError","code":400} (vLLM).
func streamFailure(obj string, err error) provider.Failure {
	f := provider.Failure{Message: obj, Err: fmt.Errorf("openai: stream: %w", err)}
	var e struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal([]byte(obj), &e) != nil {
		return f
	}
	f.Message = e.Message
	f.Code = e.Type
	if n, convErr := strconv.Atoi(string(e.Code)); convErr == nil && n >= 400 {
		f.Status = n
	} else {
		var code string
		if json.Unmarshal(e.Code, &code) == nil && code != "" {
			f.Code = code
		}
	}
	return f
}

// params builds the SDK request for one step.
func (m *Model) params(req model.Request) (sdk.ChatCompletionNewParams, error) {
	msgs, err := Messages(req.System, req.Messages, m.cfg.EchoReasoning)
	if err != nil {
		return sdk.ChatCompletionNewParams{}, err
	}
	p := sdk.ChatCompletionNewParams{
		Model:         shared.ChatModel(m.cfg.Model),
		Messages:      msgs,
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)},
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = m.cfg.MaxTokens
	}
	if maxTokens > 0 {
		if m.cfg.MaxCompletionTokens {
			p.MaxCompletionTokens = sdk.Int(int64(maxTokens))
		} else {
			p.MaxTokens = sdk.Int(int64(maxTokens))
		}
	}
	if m.cfg.ReasoningEffort != "" {
		p.ReasoningEffort = shared.ReasoningEffort(m.cfg.ReasoningEffort)
	}
	for _, t := range req.Tools {
		schema, err := provider.SchemaObject(t.Schema)
		if err != nil {
			return sdk.ChatCompletionNewParams{}, &model.Error{Kind: model.InvalidRequest, Err: fmt.Errorf("openai: tool %q: %w", t.Name, err)}
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			fn.Description = sdk.String(t.Description)
		}
		p.Tools = append(p.Tools, sdk.ChatCompletionToolParam{Function: fn})
	}
	return p, nil
}

// Messages converts a provider-neutral conversation into chat messages: the
// system prompt first, assistant tool calls as tool_calls, and each tool
// result as a tool message with its tool_call_id (an error result's text is
// prefixed "Error: ", as the API has no error flag). Reasoning is sent back
// only when echo is set, as the non-standard reasoning_content of assistant
// messages with tool calls; standard chat completions has no field for it.
func Messages(system string, msgs []conversation.Message, echo bool) ([]sdk.ChatCompletionMessageParamUnion, error) {
	if err := provider.CheckToolPairing(msgs); err != nil {
		return nil, err
	}
	out := make([]sdk.ChatCompletionMessageParamUnion, 0, len(msgs)+1)
	if system != "" {
		out = append(out, sdk.SystemMessage(system))
	}
	for i, m := range msgs {
		var text, thought []string
		var calls []sdk.ChatCompletionMessageToolCallParam
		var files []sdk.ChatCompletionContentPartUnionParam
		// returned are the files of this message's tool results: a tool
		// message holds text only, so they follow as a user message.
		var returned []sdk.ChatCompletionContentPartUnionParam
		for _, c := range m.Content {
			switch c.Type {
			case conversation.Text:
				if c.Text != "" {
					text = append(text, c.Text)
				}
			case conversation.Reasoning:
				if c.Text != "" {
					thought = append(thought, c.Text)
				}
			case conversation.ToolCall:
				calls = append(calls, sdk.ChatCompletionMessageToolCallParam{
					ID:       c.ToolCallID,
					Function: sdk.ChatCompletionMessageToolCallFunctionParam{Name: c.ToolName, Arguments: string(provider.InputOrEmpty(c.Input))},
				})
			case conversation.ToolResult:
				body := provider.ResultText(c.Output)
				if c.IsError {
					body = "Error: " + body
				}
				out = append(out, sdk.ToolMessage(body, c.ToolCallID))
				for _, a := range c.Attached {
					part, err := filePart(i, conversation.User, conversation.Content{Type: conversation.File, File: &a.File, Data: a.Data})
					if err != nil {
						return nil, err
					}
					if len(returned) == 0 {
						returned = append(returned, sdk.TextContentPart("The files the tool calls above returned:"))
					}
					returned = append(returned, part)
				}
			case conversation.File:
				part, err := filePart(i, m.Role, c)
				if err != nil {
					return nil, err
				}
				files = append(files, part)
			default:
				return nil, &model.Error{Kind: model.InvalidRequest, Err: fmt.Errorf("openai: message %d: unknown content type %q", i, c.Type)}
			}
		}
		joined := strings.Join(text, "\n\n")
		switch m.Role {
		case conversation.User:
			if len(files) > 0 {
				var content []sdk.ChatCompletionContentPartUnionParam
				if joined != "" {
					content = append(content, sdk.TextContentPart(joined))
				}
				out = append(out, sdk.UserMessage(append(content, files...)))
			} else if joined != "" {
				out = append(out, sdk.UserMessage(joined))
			}
		case conversation.Assistant:
			if joined == "" && len(calls) == 0 {
				continue
			}
			a := &sdk.ChatCompletionAssistantMessageParam{ToolCalls: calls}
			if joined != "" {
				a.Content.OfString = param.NewOpt(joined)
			}
			if echo && len(calls) > 0 && len(thought) > 0 {
				a.SetExtraFields(map[string]any{"reasoning_content": strings.Join(thought, "\n\n")})
			}
			out = append(out, sdk.ChatCompletionMessageParamUnion{OfAssistant: a})
		case conversation.ToolRole:
			if joined != "" {
				return nil, &model.Error{Kind: model.InvalidRequest, Err: fmt.Errorf("openai: message %d: text in a tool message", i)}
			}
			if len(returned) > 0 {
				out = append(out, sdk.UserMessage(returned))
			}
		default:
			return nil, &model.Error{Kind: model.InvalidRequest, Err: fmt.Errorf("openai: message %d: unknown role %q", i, m.Role)}
		}
	}
	return out, nil
}

// filePart is the content part of file block c of message i: an image
// input (image_url, a data URL) or a file input (file_data, a data URL,
// and its filename). Only a user message carries files.
func filePart(i int, role conversation.Role, c conversation.Content) (sdk.ChatCompletionContentPartUnionParam, error) {
	if role != conversation.User {
		return sdk.ChatCompletionContentPartUnionParam{}, &model.Error{Kind: model.InvalidRequest, Err: fmt.Errorf("openai: message %d: a file in a %s message", i, role)}
	}
	data, err := provider.FileData("openai", i, c)
	if err != nil {
		return sdk.ChatCompletionContentPartUnionParam{}, err
	}
	url := "data:" + c.File.MediaType + ";base64," + base64.StdEncoding.EncodeToString(data)
	if provider.IsImage(c.File.MediaType) {
		return sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: url}), nil
	}
	name := c.File.Name
	if name == "" {
		name = provider.FileName(c)
	}
	return sdk.FileContentPart(sdk.ChatCompletionContentPartFileFileParam{FileData: param.NewOpt(url), Filename: param.NewOpt(name)}), nil
}
