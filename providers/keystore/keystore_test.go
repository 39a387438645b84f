package keystore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/apikey"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/internal/wake"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/providers/anthropic"
	"github.com/baton-run/baton/providers/keystore"
	"github.com/baton-run/baton/providers/openai"
)

// keyAPI is an in-test server speaking a provider's API that accepts one
// key at a time and answers 401 to any other, as an API does to a revoked
// key. It counts what it saw.
type keyAPI struct {
	*httptest.Server
	wire    wire
	mu      sync.Mutex
	valid   string
	keys    []string // the key of every request
	refused int      // requests answered 401
}

// wire is what differs between providers: where the key is, the refusal,
// and a step's answer (a text).
type wire struct {
	key    func(*http.Request) string
	refuse func(w http.ResponseWriter, key string)
	answer func(w http.ResponseWriter, r *http.Request)
}

func newKeyAPI(t *testing.T, w wire, valid string) *keyAPI {
	m := &keyAPI{wire: w, valid: valid}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

func (m *keyAPI) accept(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.valid = key
}

func (m *keyAPI) serve(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	key := m.wire.key(r)
	m.mu.Lock()
	m.keys = append(m.keys, key)
	ok := key == m.valid
	if !ok {
		m.refused++
	}
	m.mu.Unlock()
	if !ok {
		m.wire.refuse(w, key)
		return
	}
	m.wire.answer(w, r)
}

func (m *keyAPI) counts() (keys []string, refused int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.keys...), m.refused
}

// messagesAPI is Anthropic's Messages API: the key in x-api-key, and a
// token count for the compaction's check.
var messagesAPI = wire{
	key: func(r *http.Request) string { return r.Header.Get("X-Api-Key") },
	refuse: func(w http.ResponseWriter, _ string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
	},
	answer: func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/messages/count_tokens" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"input_tokens":50000}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range [][2]string{
			{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":40,"output_tokens":1}}}`},
			{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
			{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Noted, and the earlier turns are summarised here."}}`},
			{"content_block_stop", `{"type":"content_block_stop","index":0}`},
			{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":12}}`},
			{"message_stop", `{"type":"message_stop"}`},
		} {
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev[0], ev[1])
		}
	},
}

// chatAPI is an OpenAI-compatible chat completions API: the key as a
// bearer token, and a refusal that quotes the key, as OpenAI's does.
var chatAPI = wire{
	key: func(r *http.Request) string { return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") },
	refuse: func(w http.ResponseWriter, key string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, key)
	},
	answer: func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range []string{
			`{"id":"c1","object":"chat.completion.chunk","created":1761300000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}`,
			`{"id":"c1","object":"chat.completion.chunk","created":1761300000,"model":"m","choices":[{"index":0,"delta":{"content":" there."},"finish_reason":"stop"}]}`,
			`{"id":"c1","object":"chat.completion.chunk","created":1761300000,"model":"m","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":3,"total_tokens":23}}`,
			`[DONE]`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", d)
		}
	},
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestKeyFromSecretsManagerRotated is Must show 3 of issue 18: an
// anthropic agent's key is in kumo's Secrets Manager, named by the agent
// file's apiKeySecret. The key is fetched once per container (App), used
// as x-api-key by every call, and fetched again only when the secret is
// rotated and the API refuses the old key: the call that meets the 401 is
// made once more with the new key and the turn completes. Neither key is in
// the logs, in any item of the table or in any object of the bucket
// (stream chunks and the compaction's snapshot).
func TestKeyFromSecretsManagerRotated(t *testing.T) {
	ctx := context.Background()
	emu := testenv.Emulator()
	oldKey, newKey := "sk-ant-old-"+ids.New("k"), "sk-ant-new-"+ids.New("k")
	secret := "baton/test/anthropic-" + ids.New("s")
	sm := secretsmanager.NewFromConfig(emu.Clients.Config)
	if _, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(secret), SecretString: aws.String(oldKey)}); err != nil {
		t.Fatalf("CreateSecret: %v", err)
	}
	api := newKeyAPI(t, messagesAPI, oldKey)

	dir := t.TempDir()
	file := filepath.Join(dir, "agents.json")
	agentsJSON := fmt.Sprintf(`{"agents":{"claude":{"provider":"anthropic","model":"claude-sonnet-4-5","baseURL":%q,
		"apiKeySecret":%q,"system":"You are terse.","compaction":{"inputTokens":200,"keepTurns":1}}}}`, api.URL, secret)
	if err := os.WriteFile(file, []byte(agentsJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// The key store's requests are counted: real SDK clients on kumo.
	var counter awsenv.Counter
	cfg := host.Config{Providers: []host.Provider{anthropic.Provider()}, KeyStore: countedStore(emu.URL, &counter)}
	kit := batontest.NewWith(t, cfg, batontest.Options{Agents: file, Log: log})
	fetches := func() int64 { return counter.Counts()["secretsmanager:GetSecretValue"] }

	s := kit.Session("claude")
	for i, text := range []string{"Remember the number 7.", "And the colour blue.", "What do you remember?"} {
		s.Post(text + strings.Repeat(" Some context the summary can drop.", 20))
		if out := s.Run(); out.Kind != batontest.Completed {
			t.Fatalf("turn %d: %+v, want completed", i+1, out)
		}
	}
	if n := fetches(); n != 1 {
		t.Fatalf("after three turns in one container the key was fetched %d times, want 1", n)
	}
	keys, refused := api.counts()
	if refused != 0 || len(keys) == 0 || !all(keys, oldKey) {
		t.Fatalf("before the rotation: %d refused, keys %q; want every call with the stored key", refused, keys)
	}
	if got := facts(s, reducer.ContextCompacted); got == 0 {
		var types []reducer.Type
		for _, f := range s.Facts() {
			types = append(types, f.Type)
		}
		t.Fatalf("no compaction ran (facts %v); the test wants a snapshot", types)
	}

	// Rotate: the store holds the new key, the API takes only it.
	if _, err := sm.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String(secret), SecretString: aws.String(newKey)}); err != nil {
		t.Fatalf("PutSecretValue: %v", err)
	}
	api.accept(newKey)
	before := len(keys)
	s.Post("Anything new?")
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("the turn after the rotation: %+v, want completed", out)
	}
	keys, refused = api.counts()
	if refused != 1 || keys[before] != oldKey || !all(keys[before+1:], newKey) {
		t.Fatalf("after the rotation: %d refused, keys %q; want one refusal of the old key, then the new key", refused, keys[before:])
	}
	if n := fetches(); n != 2 {
		t.Fatalf("after the rotation the key was fetched %d times in all, want 2 (once, plus once for the rotation)", n)
	}
	s.Post("Still there?")
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("a later turn: %+v", out)
	}
	if n := fetches(); n != 2 {
		t.Fatalf("a turn after the refresh fetched again: %d fetches, want 2", n)
	}

	// Another container: its own App fetches the key once.
	other, err := app.NewOn(ctx, cfg, kit.Resources, kit.AWS, log)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Sessions.Post(ctx, s.ID, reducer.Actor{Kind: reducer.ActorOperator, ID: batontest.Owner}, "From a new container."); err != nil {
		t.Fatal(err)
	}
	res, err := other.Worker().Handle(ctx, wake.Wake{Session: s.ID, Reason: "test"})
	if err != nil || len(res.Outcomes) == 0 || res.Outcomes[len(res.Outcomes)-1].Kind != batontest.Completed {
		t.Fatalf("the new container's turn: %+v, %v", res, err)
	}
	if n := fetches(); n != 3 {
		t.Fatalf("with a second container the key was fetched %d times in all, want 3", n)
	}
	t.Logf("fetches: %d (2 containers, 1 rotation); model requests %d, refused %d", fetches(), len(keys), refused)

	for _, k := range []string{oldKey, newKey} {
		if strings.Contains(logs.String(), k) {
			t.Errorf("a key is in the logs")
		}
	}
	noKeyStored(t, kit, true, oldKey, newKey)
}

// TestKeyFromParameterStoreByProviderDefault is the template's way: the
// resume function's BATON_OPENAI_KEY_SECRET names an SSM SecureString
// parameter in kumo, and an openai agent that names no key uses it as its
// bearer token. A revoked key the store still holds fails the turn for
// auth after one more fetch, and the failure, though the API's refusal
// quotes the key, does not; once the parameter holds the new key, the next
// turn's refused call fetches it and is made again.
func TestKeyFromParameterStoreByProviderDefault(t *testing.T) {
	ctx := context.Background()
	emu := testenv.Emulator()
	oldKey, newKey := "sk-proj-old-"+ids.New("k"), "sk-proj-new-"+ids.New("k")
	param := "/baton/test/openai-" + ids.New("p")
	params := ssm.NewFromConfig(emu.Clients.Config)
	put := func(v string) {
		t.Helper()
		if _, err := params.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(param), Value: aws.String(v),
			Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true)}); err != nil {
			t.Fatalf("PutParameter: %v", err)
		}
	}
	put(oldKey)
	t.Setenv(agents.SecretEnv("openai"), "ssm:"+param)
	api := newKeyAPI(t, chatAPI, oldKey)

	file := filepath.Join(t.TempDir(), "agents.json")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`{"agents":{"gpt":{"provider":"openai","model":"m","baseURL":%q}}}`, api.URL+"/v1")), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var counter awsenv.Counter
	cfg := host.Config{Providers: []host.Provider{openai.Provider()}, KeyStore: countedStore(emu.URL, &counter)}
	kit := batontest.NewWith(t, cfg, batontest.Options{Agents: file, Log: log})
	fetches := func() int64 { return counter.Counts()["amazonssm:GetParameter"] }

	s := kit.Session("gpt")
	s.Post("Hello?")
	if out := s.Run(); out.Kind != batontest.Completed || fetches() != 1 {
		t.Fatalf("first turn: %+v after %d fetches, want completed after 1", out, fetches())
	}

	api.accept(newKey) // revoked; the parameter still holds the old key
	s.Post("Still there?")
	out := s.Run()
	if out.Kind != batontest.Failed || out.Failure == nil || !strings.Contains(out.Failure.Error, "auth") {
		t.Fatalf("a revoked key: %+v (%+v), want the turn failed for auth", out, out.Failure)
	}
	if strings.Contains(out.Failure.Error, oldKey) || !strings.Contains(out.Failure.Error, "[redacted]") {
		t.Fatalf("the failure %q quotes the key", out.Failure.Error)
	}
	if n := fetches(); n != 2 {
		t.Fatalf("the refusal fetched %d times in all, want 2", n)
	}

	put(newKey)
	before := len(must(api.counts()))
	s.Post("And now?")
	if out := s.Run(); out.Kind != batontest.Completed {
		t.Fatalf("after the rotation: %+v (%+v), want completed", out, out.Failure)
	}
	keys, refused := api.counts()
	if refused != 2 || !all(keys[before:before+1], oldKey) || !all(keys[before+1:], newKey) || fetches() != 3 {
		t.Fatalf("after the rotation: %d refused in all, keys %q, %d fetches; want one more refusal, then the new key, 3 fetches",
			refused, keys[before:], fetches())
	}
	t.Logf("fetches: %d (1 container, 1 revocation, 1 rotation)", fetches())
	for _, k := range []string{oldKey, newKey} {
		if strings.Contains(logs.String(), k) {
			t.Errorf("a key is in the logs")
		}
	}
	noKeyStored(t, kit, false, oldKey, newKey)
}

func must[T any](v T, _ int) T { return v }

// countedStore is the key store of keystore.AWS on clients whose requests
// c counts.
func countedStore(endpoint string, c *awsenv.Counter) host.KeyStore {
	return func(aws.Config) apikey.Fetcher { return keystore.AWS()(awsenv.Counted(endpoint, c).Config) }
}

func all(keys []string, want string) bool {
	for _, k := range keys {
		if k != want {
			return false
		}
	}
	return true
}

func facts(s *batontest.Session, typ reducer.Type) int {
	n := 0
	for _, f := range s.Facts() {
		if f.Type == typ {
			n++
		}
	}
	return n
}

// noKeyStored scans the whole table and reads every object of the bucket,
// failing when one holds a key; wantSnapshot wants a snapshot among them.
func noKeyStored(t *testing.T, kit *batontest.Kit, wantSnapshot bool, keys ...string) {
	t.Helper()
	c, res := awsenv.FromConfig(kit.AWS), kit.Resources
	ctx := context.Background()
	items := 0
	p := dynamodb.NewScanPaginator(c.DynamoDB, &dynamodb.ScanInput{TableName: aws.String(res.Table)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("scan: %v", err)
		}
		for _, it := range page.Items {
			items++
			b, err := json.Marshal(it)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if bytes.Contains(b, []byte(k)) {
					t.Errorf("a key is in a table item")
				}
			}
		}
	}
	objects, snapshots := 0, 0
	lp := s3.NewListObjectsV2Paginator(c.S3, &s3.ListObjectsV2Input{Bucket: aws.String(res.Bucket)})
	for lp.HasMorePages() {
		page, err := lp.NextPage(ctx)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		for _, o := range page.Contents {
			objects++
			if strings.HasPrefix(aws.ToString(o.Key), "snapshots/") {
				snapshots++
			}
			out, err := c.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(res.Bucket), Key: o.Key})
			if err != nil {
				t.Fatalf("get %s: %v", aws.ToString(o.Key), err)
			}
			b, err := io.ReadAll(out.Body)
			out.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if bytes.Contains(b, []byte(k)) {
					t.Errorf("a key is in object %s", aws.ToString(o.Key))
				}
			}
		}
	}
	if items == 0 || objects == 0 || (wantSnapshot && snapshots == 0) {
		t.Fatalf("scanned %d items and read %d objects (%d snapshots); want some of each", items, objects, snapshots)
	}
	t.Logf("no key in %d table items or %d objects (%d snapshots)", items, objects, snapshots)
}
