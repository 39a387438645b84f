package anthropic

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/provider"
	"github.com/baton-run/baton/pkg/conversation"
)

const name = "anthropic"

// Config configures a Model.
type Config struct {
	// Model is the model id, such as "claude-sonnet-4-5". Required.
	Model string
	// MaxTokens caps the output of a step when the request does not; it
	// defaults to 4096.
	MaxTokens int
	// APIKey is sent as x-api-key; empty falls back to the SDK's environment
	// defaults (ANTHROPIC_API_KEY).
	APIKey string
	// BaseURL overrides the API endpoint (tests, proxies).
	BaseURL string
	// ThinkingBudget, when positive, enables extended thinking with this
	// many budget tokens; it must be below the step's max tokens.
	ThinkingBudget int
	// AdaptiveThinking enables adaptive thinking (newer models); it wins
	// over ThinkingBudget.
	AdaptiveThinking bool
	// HTTPClient replaces the SDK's default HTTP client.
	HTTPClient *http.Client
	// Options are appended to the SDK client options.
	Options []option.RequestOption
}

// Model streams steps from the Anthropic Messages API. It is safe for
// concurrent use.
type Model struct {
	cfg    Config
	client sdk.Client
}

var (
	_ model.Model   = (*Model)(nil)
	_ model.Counter = (*Model)(nil)
)

// New returns a Model for cfg. The SDK's own retries are off: the turn
// runner redoes a failed step under the agent's model.RetryPolicy, so a
// fault that persists can become a suspension.
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("anthropic: config: model is required")
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = 4096
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
		provider.Relay(ctx, name, m.client.Messages.NewStreaming(ctx, params), &state{}, failure, yield)
	}
}

// block is one content block being streamed.
type block struct {
	typ   string
	id    string
	name  string
	input strings.Builder
}

// state folds the SSE events of one step into model events.
type state struct {
	blocks     map[int64]*block
	stop       model.StopReason
	usage      model.Usage
	incomplete string // id of a tool call whose input was cut off
	buf        [1]model.Event
	done       bool
}

// Fold implements provider.Folder: the step is done at message_stop.
func (s *state) Fold(ev *sdk.MessageStreamEventUnion) ([]model.Event, bool, error) {
	out, err := s.handle(ev)
	return out, s.done, err
}

// End implements provider.Folder: a stream that ends before message_stop
// was cut off.
func (s *state) End() ([]model.Event, error) { return nil, provider.Truncated(name) }

func (s *state) handle(ev *sdk.MessageStreamEventUnion) ([]model.Event, error) {
	switch ev.Type {
	case "message_start":
		u := ev.Message.Usage
		s.usage.InputTokens = u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
		s.usage.OutputTokens = u.OutputTokens
	case "content_block_start":
		cb := ev.ContentBlock
		if s.blocks == nil {
			s.blocks = make(map[int64]*block, 4)
		}
		b := &block{typ: cb.Type, id: cb.ID, name: cb.Name}
		s.blocks[ev.Index] = b
		// A block may start with content already in it.
		switch cb.Type {
		case "text":
			if cb.Text != "" {
				return s.one(model.Event{Type: model.TextDelta, Text: cb.Text}), nil
			}
		case "thinking":
			if cb.Thinking != "" {
				return s.one(model.Event{Type: model.ReasoningDelta, Text: cb.Thinking}), nil
			}
		}
	case "content_block_delta":
		d := &ev.Delta
		switch d.Type {
		case "text_delta":
			if d.Text != "" {
				return s.one(model.Event{Type: model.TextDelta, Text: d.Text}), nil
			}
		case "thinking_delta":
			if d.Thinking != "" {
				return s.one(model.Event{Type: model.ReasoningDelta, Text: d.Thinking}), nil
			}
		case "signature_delta":
			if d.Signature != "" {
				return s.one(model.Event{Type: model.ReasoningSignature, Text: d.Signature}), nil
			}
		case "input_json_delta":
			b := s.blocks[ev.Index]
			if b == nil {
				return nil, &model.Error{Kind: model.Interrupted, Err: fmt.Errorf("anthropic: malformed stream: input delta for unknown block %d", ev.Index)}
			}
			b.input.WriteString(d.PartialJSON)
		}
	case "content_block_stop":
		b := s.blocks[ev.Index]
		if b == nil || b.typ != "tool_use" {
			return nil, nil
		}
		delete(s.blocks, ev.Index)
		in, ok := provider.CallInput(b.input.String())
		if !ok {
			s.incomplete = b.id
			return nil, nil
		}
		return s.one(model.Event{Type: model.ToolCall, Call: model.Call{ID: b.id, Name: b.name, Input: in}}), nil
	case "message_delta":
		s.stop = stopReason(ev.Delta.StopReason)
		u := ev.Usage
		if in := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens; in > 0 {
			s.usage.InputTokens = in
		}
		if u.OutputTokens > 0 {
			s.usage.OutputTokens = u.OutputTokens
		}
	case "message_stop":
		if s.stop == "" {
			return nil, &model.Error{Kind: model.Interrupted, Err: errors.New("anthropic: malformed stream: message stopped without a stop reason")}
		}
		if s.incomplete != "" && s.stop != model.StopLength {
			return nil, provider.BadToolInput(name, s.incomplete)
		}
		s.done = true
		return s.one(model.Event{Type: model.Finish, Stop: s.stop, Usage: provider.ClampUsage(s.usage)}), nil
	}
	return nil, nil
}

func (s *state) one(e model.Event) []model.Event {
	s.buf[0] = e
	return s.buf[:]
}

func stopReason(r sdk.StopReason) model.StopReason {
	switch r {
	case sdk.StopReasonEndTurn, sdk.StopReasonStopSequence:
		return model.StopEnd
	case sdk.StopReasonToolUse:
		return model.StopToolCalls
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return model.StopLength
	default:
		return model.StopOther
	}
}

// failure reads what the API reported from an SDK error.
func failure(err error) provider.Failure {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		f := provider.Failure{
			Code: string(apiErr.Type()),
			Err:  fmt.Errorf("anthropic: %w", err),
		}
		if apiErr.StatusCode >= 400 { // an in-stream error event carries the stream's 200
			f.Status = apiErr.StatusCode
		}
		if apiErr.Response != nil && f.Status != 0 {
			f.Header = apiErr.Response.Header
		}
		var body struct {
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(apiErr.RawJSON()), &body) == nil {
			f.Message = body.Error.Message
			if f.Code == "" {
				f.Code = body.Error.Type
			}
		}
		return f
	}
	// An error event whose body the SDK could not parse, or a transport error.
	msg := err.Error()
	f := provider.Failure{Message: msg, Err: fmt.Errorf("anthropic: %w", err)}
	if strings.Contains(msg, "received error while streaming") {
		f.Code = msg
	}
	return f
}

// CountTokens implements model.Counter with the Messages API's token
// count for the request the step would send: messages, system prompt,
// tools and thinking.
func (m *Model) CountTokens(ctx context.Context, req model.Request) (int64, error) {
	p, err := m.params(req)
	if err != nil {
		return 0, err
	}
	cp := sdk.MessageCountTokensParams{Model: p.Model, Messages: p.Messages, Thinking: p.Thinking}
	if len(p.System) > 0 {
		cp.System = sdk.MessageCountTokensParamsSystemUnion{OfTextBlockArray: p.System}
	}
	for _, t := range p.Tools {
		cp.Tools = append(cp.Tools, sdk.MessageCountTokensToolUnionParam{OfTool: t.OfTool})
	}
	res, err := m.client.Messages.CountTokens(ctx, cp)
	if err != nil {
		return 0, provider.ClassifyCall(ctx, name, err, failure)
	}
	return res.InputTokens, nil
}

// params builds the SDK request for one step.
func (m *Model) params(req model.Request) (sdk.MessageNewParams, error) {
	msgs, err := Messages(req.Messages)
	if err != nil {
		return sdk.MessageNewParams{}, err
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = m.cfg.MaxTokens
	}
	p := sdk.MessageNewParams{
		Model:     sdk.Model(m.cfg.Model),
		MaxTokens: int64(maxTokens),
		Messages:  msgs,
	}
	if req.System != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	if len(req.Tools) > 0 {
		p.Tools = make([]sdk.ToolUnionParam, 0, len(req.Tools))
		for _, t := range req.Tools {
			tp, err := toolParam(t)
			if err != nil {
				return sdk.MessageNewParams{}, &model.Error{Kind: model.InvalidRequest, Err: fmt.Errorf("anthropic: tool %q: %w", t.Name, err)}
			}
			p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: tp})
		}
	}
	switch {
	case m.cfg.AdaptiveThinking:
		p.Thinking = sdk.ThinkingConfigParamUnion{OfAdaptive: &sdk.ThinkingConfigAdaptiveParam{}}
	case m.cfg.ThinkingBudget > 0:
		p.Thinking = sdk.ThinkingConfigParamOfEnabled(int64(m.cfg.ThinkingBudget))
	}
	return p, nil
}

func toolParam(t model.ToolSpec) (*sdk.ToolParam, error) {
	var schema map[string]json.RawMessage
	if len(t.Schema) > 0 {
		if err := json.Unmarshal(t.Schema, &schema); err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
	}
	in := sdk.ToolInputSchemaParam{}
	for k, v := range schema {
		switch k {
		case "type":
			// always "object"
		case "properties":
			in.Properties = v
		case "required":
			if err := json.Unmarshal(v, &in.Required); err != nil {
				return nil, fmt.Errorf("schema required: %w", err)
			}
		default:
			if in.ExtraFields == nil {
				in.ExtraFields = map[string]any{}
			}
			in.ExtraFields[k] = v
		}
	}
	if in.Properties == nil {
		in.Properties = json.RawMessage(`{}`)
	}
	tp := &sdk.ToolParam{Name: t.Name, InputSchema: in}
	if t.Description != "" {
		tp.Description = sdk.String(t.Description)
	}
	return tp, nil
}

// Messages converts a provider-neutral conversation into Anthropic messages:
// tool messages become user messages of tool_result blocks, reasoning with a
// signature becomes a thinking block (unsigned reasoning cannot be replayed
// and is dropped), empty text is dropped, and consecutive messages of the
// same role are merged, as the API wants roles to alternate.
func Messages(msgs []conversation.Message) ([]sdk.MessageParam, error) {
	return provider.Alternate(msgs, contentBlock, sdk.MessageParamRoleUser, sdk.MessageParamRoleAssistant,
		func(role sdk.MessageParamRole, blocks []sdk.ContentBlockParamUnion) sdk.MessageParam {
			return sdk.MessageParam{Role: role, Content: blocks}
		})
}

// contentBlock is the Anthropic block of content c of message i.
func contentBlock(i int, c conversation.Content) (sdk.ContentBlockParamUnion, error) {
	switch c.Type {
	case conversation.Text:
		return sdk.NewTextBlock(c.Text), nil
	case conversation.Reasoning:
		return sdk.NewThinkingBlock(c.Signature, c.Text), nil
	case conversation.ToolCall:
		return sdk.NewToolUseBlock(c.ToolCallID, provider.InputOrEmpty(c.Input), c.ToolName), nil
	case conversation.ToolResult:
		tr := &sdk.ToolResultBlockParam{ToolUseID: c.ToolCallID}
		if text := provider.ResultText(c.Output); text != "" {
			tr.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: text}}}
		}
		// Files the tool returned, in the tool_result's content.
		for _, a := range c.Attached {
			b, err := contentBlock(i, conversation.Content{Type: conversation.File, File: &a.File, Data: a.Data})
			if err != nil {
				return sdk.ContentBlockParamUnion{}, err
			}
			switch {
			case b.OfImage != nil:
				tr.Content = append(tr.Content, sdk.ToolResultBlockParamContentUnion{OfImage: b.OfImage})
			case b.OfDocument != nil:
				tr.Content = append(tr.Content, sdk.ToolResultBlockParamContentUnion{OfDocument: b.OfDocument})
			}
		}
		if c.IsError {
			tr.IsError = sdk.Bool(true)
		}
		return sdk.ContentBlockParamUnion{OfToolResult: tr}, nil
	case conversation.File:
		data, err := provider.FileData("anthropic", i, c)
		if err != nil {
			return sdk.ContentBlockParamUnion{}, err
		}
		enc := base64.StdEncoding.EncodeToString(data)
		switch {
		case provider.IsImage(c.File.MediaType):
			return sdk.NewImageBlockBase64(c.File.MediaType, enc), nil
		case c.File.MediaType == "application/pdf":
			return sdk.NewDocumentBlock(sdk.Base64PDFSourceParam{Data: enc}), nil
		case strings.HasPrefix(c.File.MediaType, "text/"):
			return sdk.NewDocumentBlock(sdk.PlainTextSourceParam{Data: string(data)}), nil
		}
		return sdk.ContentBlockParamUnion{}, &model.Error{Kind: model.InvalidRequest, Err: fmt.Errorf("anthropic: message %d: a file of type %s: Anthropic takes images, PDF and text", i, c.File.MediaType)}
	default:
		return sdk.ContentBlockParamUnion{}, &model.Error{Kind: model.InvalidRequest, Err: fmt.Errorf("anthropic: message %d: unknown content type %q", i, c.Type)}
	}
}
