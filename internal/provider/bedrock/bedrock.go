package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
	smithydocument "github.com/aws/smithy-go/document"

	"github.com/baton-run/baton/internal/model"
	"github.com/baton-run/baton/internal/provider"
	"github.com/baton-run/baton/pkg/conversation"
)

const name = "bedrock"

// Config configures a Model.
type Config struct {
	// Model is the model or inference profile id, such as
	// "us.anthropic.claude-sonnet-4-5-20250929-v1:0". Required.
	Model string
	// MaxTokens caps the output of a step when the request does not; 0
	// leaves it to the model.
	MaxTokens int
	// ThinkingBudget, when positive, asks an Anthropic model for extended
	// thinking through additionalModelRequestFields.
	ThinkingBudget int
	// AdditionalFields are sent as additionalModelRequestFields, for model
	// parameters Converse has no field for. ThinkingBudget is merged in.
	AdditionalFields map[string]any
}

// Model streams steps from Bedrock. It is safe for concurrent use.
type Model struct {
	cfg    Config
	client *bedrockruntime.Client
}

var (
	_ model.Model   = (*Model)(nil)
	_ model.Counter = (*Model)(nil)
)

// New returns a Model calling Bedrock through client. Each call turns the
// SDK's retries off (the turn runner redoes a failed step under the agent's
// model.RetryPolicy), so the client may be shared with code that wants them.
func New(client *bedrockruntime.Client, cfg Config) (*Model, error) {
	if client == nil {
		return nil, errors.New("bedrock: client is required")
	}
	if cfg.Model == "" {
		return nil, errors.New("bedrock: config: model is required")
	}
	return &Model{cfg: cfg, client: client}, nil
}

func noRetries(o *bedrockruntime.Options) { o.Retryer = aws.NopRetryer{} }

// Stream implements model.Model.
func (m *Model) Stream(ctx context.Context, req model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		in, err := m.input(req)
		if err != nil {
			yield(model.Event{}, err)
			return
		}
		out, err := m.client.ConverseStream(ctx, in, noRetries)
		if err != nil {
			yield(model.Event{}, provider.ClassifyCall(ctx, name, err, failure))
			return
		}
		stream := out.GetStream()
		defer stream.Close()

		var st state
		events := stream.Events()
		for {
			var ev types.ConverseStreamOutput
			var ok bool
			select {
			case ev, ok = <-events:
			case <-ctx.Done():
				yield(model.Event{}, provider.Canceled(name, ctx.Err()))
				return
			}
			if !ok {
				break
			}
			e, emit, err := st.handle(ev)
			if err != nil {
				yield(model.Event{}, err)
				return
			}
			if emit && !yield(e, nil) {
				return
			}
		}
		if err := stream.Err(); err != nil {
			yield(model.Event{}, provider.ClassifyCall(ctx, name, err, failure))
			return
		}
		if ctx.Err() != nil {
			yield(model.Event{}, provider.Canceled(name, ctx.Err()))
			return
		}
		fin, err := st.finish()
		if err != nil {
			yield(model.Event{}, err)
			return
		}
		yield(fin, nil)
	}
}

// toolUse is one toolUse block being streamed.
type toolUse struct {
	id, name string
	input    strings.Builder
}

// state folds the stream's events into model events.
type state struct {
	tools      map[int32]*toolUse
	stopped    bool
	stop       model.StopReason
	usage      model.Usage
	incomplete string
}

func (s *state) handle(ev types.ConverseStreamOutput) (model.Event, bool, error) {
	switch v := ev.(type) {
	case *types.ConverseStreamOutputMemberContentBlockStart:
		if tu, ok := v.Value.Start.(*types.ContentBlockStartMemberToolUse); ok {
			if s.tools == nil {
				s.tools = make(map[int32]*toolUse, 2)
			}
			s.tools[aws.ToInt32(v.Value.ContentBlockIndex)] = &toolUse{id: aws.ToString(tu.Value.ToolUseId), name: aws.ToString(tu.Value.Name)}
		}
	case *types.ConverseStreamOutputMemberContentBlockDelta:
		switch d := v.Value.Delta.(type) {
		case *types.ContentBlockDeltaMemberText:
			if d.Value != "" {
				return model.Event{Type: model.TextDelta, Text: d.Value}, true, nil
			}
		case *types.ContentBlockDeltaMemberReasoningContent:
			switch r := d.Value.(type) {
			case *types.ReasoningContentBlockDeltaMemberText:
				if r.Value != "" {
					return model.Event{Type: model.ReasoningDelta, Text: r.Value}, true, nil
				}
			case *types.ReasoningContentBlockDeltaMemberSignature:
				if r.Value != "" {
					return model.Event{Type: model.ReasoningSignature, Text: r.Value}, true, nil
				}
			}
		case *types.ContentBlockDeltaMemberToolUse:
			tu := s.tools[aws.ToInt32(v.Value.ContentBlockIndex)]
			if tu == nil {
				return model.Event{}, false, &model.Error{Kind: model.Interrupted, Err: fmt.Errorf("bedrock: malformed stream: toolUse delta for unknown block %d", aws.ToInt32(v.Value.ContentBlockIndex))}
			}
			tu.input.WriteString(aws.ToString(d.Value.Input))
		}
	case *types.ConverseStreamOutputMemberContentBlockStop:
		idx := aws.ToInt32(v.Value.ContentBlockIndex)
		tu := s.tools[idx]
		if tu == nil {
			return model.Event{}, false, nil
		}
		delete(s.tools, idx)
		in, ok := provider.CallInput(tu.input.String())
		if !ok {
			s.incomplete = tu.id
			return model.Event{}, false, nil
		}
		return model.Event{Type: model.ToolCall, Call: model.Call{ID: tu.id, Name: tu.name, Input: in}}, true, nil
	case *types.ConverseStreamOutputMemberMessageStop:
		s.stopped = true
		s.stop = stopReason(v.Value.StopReason)
	case *types.ConverseStreamOutputMemberMetadata:
		if u := v.Value.Usage; u != nil {
			s.usage = model.Usage{
				InputTokens:  int64(aws.ToInt32(u.InputTokens)) + int64(aws.ToInt32(u.CacheReadInputTokens)) + int64(aws.ToInt32(u.CacheWriteInputTokens)),
				OutputTokens: int64(aws.ToInt32(u.OutputTokens)),
			}
		}
	}
	return model.Event{}, false, nil
}

// finish ends the step when the stream is over: metadata (usage) comes
// after messageStop, so the finish event waits for the end.
func (s *state) finish() (model.Event, error) {
	if !s.stopped {
		return model.Event{}, provider.Truncated(name)
	}
	if s.incomplete != "" && s.stop != model.StopLength {
		return model.Event{}, provider.BadToolInput(name, s.incomplete)
	}
	return model.Event{Type: model.Finish, Stop: s.stop, Usage: provider.ClampUsage(s.usage)}, nil
}

func stopReason(r types.StopReason) model.StopReason {
	switch r {
	case types.StopReasonEndTurn, types.StopReasonStopSequence:
		return model.StopEnd
	case types.StopReasonToolUse:
		return model.StopToolCalls
	case types.StopReasonMaxTokens, types.StopReasonModelContextWindowExceeded:
		return model.StopLength
	default:
		return model.StopOther
	}
}

// failure reads what Bedrock reported from an SDK error.
func failure(err error) provider.Failure {
	f := provider.Failure{Err: fmt.Errorf("bedrock: %w", err)}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		f.Status = re.HTTPStatusCode()
		if re.Response != nil {
			f.Header = re.Response.Header
		}
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		f.Code = ae.ErrorCode()
		f.Message = ae.ErrorMessage()
	}
	// An exception inside the stream has no HTTP status of its own, but a
	// model stream error carries the model's.
	var mse *types.ModelStreamErrorException
	if errors.As(err, &mse) && f.Status == 0 && mse.OriginalStatusCode != nil {
		f.Status = int(*mse.OriginalStatusCode)
		if mse.OriginalMessage != nil {
			f.Message = *mse.OriginalMessage
		}
	}
	return f
}

// CountTokens implements model.Counter with Bedrock's CountTokens for the
// Converse request the step would send: messages, system prompt, tools and
// additional fields.
func (m *Model) CountTokens(ctx context.Context, req model.Request) (int64, error) {
	in, err := m.input(req)
	if err != nil {
		return 0, err
	}
	out, err := m.client.CountTokens(ctx, &bedrockruntime.CountTokensInput{
		ModelId: in.ModelId,
		Input: &types.CountTokensInputMemberConverse{Value: types.ConverseTokensRequest{
			Messages: in.Messages, System: in.System, ToolConfig: in.ToolConfig,
			AdditionalModelRequestFields: in.AdditionalModelRequestFields,
		}},
	}, noRetries)
	if err != nil {
		return 0, provider.ClassifyCall(ctx, name, err, failure)
	}
	if out.InputTokens == nil {
		return 0, &model.Error{Kind: model.Other, Err: errors.New("bedrock: count tokens: no count in the answer")}
	}
	return int64(*out.InputTokens), nil
}

// input builds the ConverseStream request for one step.
func (m *Model) input(req model.Request) (*bedrockruntime.ConverseStreamInput, error) {
	msgs, err := Messages(req.Messages)
	if err != nil {
		return nil, err
	}
	in := &bedrockruntime.ConverseStreamInput{ModelId: aws.String(m.cfg.Model), Messages: msgs}
	if req.System != "" {
		in.System = []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: req.System}}
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = m.cfg.MaxTokens
	}
	if maxTokens > 0 {
		in.InferenceConfig = &types.InferenceConfiguration{MaxTokens: aws.Int32(int32(min(maxTokens, 1<<31-1)))}
	}
	if len(req.Tools) > 0 {
		tools := make([]types.Tool, 0, len(req.Tools))
		for _, t := range req.Tools {
			schema, err := toolSchema(t.Schema)
			if err != nil {
				return nil, &model.Error{Kind: model.InvalidRequest, Err: fmt.Errorf("bedrock: tool %q: %w", t.Name, err)}
			}
			spec := types.ToolSpecification{
				Name:        aws.String(t.Name),
				InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(schema)},
			}
			if t.Description != "" {
				spec.Description = aws.String(t.Description)
			}
			tools = append(tools, &types.ToolMemberToolSpec{Value: spec})
		}
		in.ToolConfig = &types.ToolConfiguration{Tools: tools}
	}
	fields := make(map[string]any, len(m.cfg.AdditionalFields)+1)
	for k, v := range m.cfg.AdditionalFields {
		fields[k] = v
	}
	if m.cfg.ThinkingBudget > 0 {
		fields["thinking"] = map[string]any{"type": "enabled", "budget_tokens": m.cfg.ThinkingBudget}
	}
	if len(fields) > 0 {
		in.AdditionalModelRequestFields = document.NewLazyDocument(fields)
	}
	return in, nil
}

// Messages converts a provider-neutral conversation into Converse messages:
// tool messages become user messages of toolResult blocks (status error for
// an error result), reasoning with a signature becomes a reasoningContent
// block (unsigned reasoning cannot be replayed and is dropped), empty text
// is dropped, and consecutive messages of one role are merged, as Converse
// wants roles to alternate.
func Messages(msgs []conversation.Message) ([]types.Message, error) {
	return provider.Alternate(msgs, contentBlock, types.ConversationRoleUser, types.ConversationRoleAssistant,
		func(role types.ConversationRole, blocks []types.ContentBlock) types.Message {
			return types.Message{Role: role, Content: blocks}
		})
}

// contentBlock is the Converse block of content c of message i.
func contentBlock(i int, c conversation.Content) (types.ContentBlock, error) {
	switch c.Type {
	case conversation.Text:
		return &types.ContentBlockMemberText{Value: c.Text}, nil
	case conversation.Reasoning:
		return &types.ContentBlockMemberReasoningContent{
			Value: &types.ReasoningContentBlockMemberReasoningText{
				Value: types.ReasoningTextBlock{Text: aws.String(c.Text), Signature: aws.String(c.Signature)},
			},
		}, nil
	case conversation.ToolCall:
		input, err := jsonDocument(provider.InputOrEmpty(c.Input))
		if err != nil {
			return nil, &model.Error{Kind: model.InvalidRequest, Err: fmt.Errorf("bedrock: message %d: tool call %s: %w", i, c.ToolCallID, err)}
		}
		return &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
			ToolUseId: aws.String(c.ToolCallID),
			Name:      aws.String(c.ToolName),
			Input:     document.NewLazyDocument(input),
		}}, nil
	case conversation.ToolResult:
		text := provider.ResultText(c.Output)
		if text == "" {
			text = "(no output)" // Converse rejects an empty text block
		}
		tr := types.ToolResultBlock{
			ToolUseId: aws.String(c.ToolCallID),
			Content:   []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: text}},
		}
		// Files the tool returned, in the toolResult's content.
		for _, a := range c.Attached {
			b, err := fileBlock(i, conversation.Content{Type: conversation.File, File: &a.File, Data: a.Data})
			if err != nil {
				return nil, err
			}
			switch x := b.(type) {
			case *types.ContentBlockMemberImage:
				tr.Content = append(tr.Content, &types.ToolResultContentBlockMemberImage{Value: x.Value})
			case *types.ContentBlockMemberDocument:
				tr.Content = append(tr.Content, &types.ToolResultContentBlockMemberDocument{Value: x.Value})
			}
		}
		if c.IsError {
			tr.Status = types.ToolResultStatusError
		}
		return &types.ContentBlockMemberToolResult{Value: tr}, nil
	case conversation.File:
		return fileBlock(i, c)
	default:
		return nil, &model.Error{Kind: model.InvalidRequest, Err: fmt.Errorf("bedrock: message %d: unknown content type %q", i, c.Type)}
	}
}

// jsonDocument decodes JSON into values the SDK's document encoder writes
// faithfully: numbers stay exact as document.Number.
func jsonDocument(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode input: %w", err)
	}
	return numbers(v), nil
}

func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		return smithydocument.Number(x)
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	}
	return v
}

func toolSchema(schema json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	v, err := jsonDocument(schema)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, errors.New("schema: not a JSON object")
	}
	return v, nil
}

// fileBlock is the Converse image or document block of file block c.
func fileBlock(i int, c conversation.Content) (types.ContentBlock, error) {
	data, err := provider.FileData("bedrock", i, c)
	if err != nil {
		return nil, err
	}
	mt := c.File.MediaType
	if f, ok := imageFormats[mt]; ok {
		return &types.ContentBlockMemberImage{Value: types.ImageBlock{Format: f, Source: &types.ImageSourceMemberBytes{Value: data}}}, nil
	}
	if f, ok := documentFormats[mt]; ok {
		return &types.ContentBlockMemberDocument{Value: types.DocumentBlock{Format: f, Name: aws.String(provider.FileName(c)),
			Source: &types.DocumentSourceMemberBytes{Value: data}}}, nil
	}
	return nil, &model.Error{Kind: model.InvalidRequest, Err: fmt.Errorf("bedrock: message %d: a file of type %s, which Converse does not take", i, mt)}
}

var imageFormats = map[string]types.ImageFormat{
	"image/png": types.ImageFormatPng, "image/jpeg": types.ImageFormatJpeg,
	"image/gif": types.ImageFormatGif, "image/webp": types.ImageFormatWebp,
}

var documentFormats = map[string]types.DocumentFormat{
	"application/pdf": types.DocumentFormatPdf, "text/csv": types.DocumentFormatCsv, "text/html": types.DocumentFormatHtml,
	"text/plain": types.DocumentFormatTxt, "text/markdown": types.DocumentFormatMd,
	"application/msword": types.DocumentFormatDoc,
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document": types.DocumentFormatDocx,
	"application/vnd.ms-excel": types.DocumentFormatXls,
	"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": types.DocumentFormatXlsx,
}
