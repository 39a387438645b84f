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

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/batontest"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/pkg/apikey"
	"github.com/baton-run/baton/pkg/awsenv"
	"github.com/baton-run/baton/pkg/ids"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/wake"
	"github.com/baton-run/baton/providers/anthropic"
	"github.com/baton-run/baton/providers/keystore"
)

// messagesAPI is an in-test server speaking Anthropic's Messages API that
// accepts one key at a time (x-api-key) and answers 401 to any other, as
// the API does to a revoked key. It counts what it saw.
type messagesAPI struct {
	*httptest.Server
	mu      sync.Mutex
	valid   string
	keys    []string // the x-api-key of every request
	refused int      // requests answered 401
	answers int      // model steps answered (summaries included)
}

func newMessagesAPI(t *testing.T, valid string) *messagesAPI {
	m := &messagesAPI{valid: valid}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

func (m *messagesAPI) accept(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.valid = key
}

func (m *messagesAPI) serve(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	key := r.Header.Get("X-Api-Key")
	m.mu.Lock()
	m.keys = append(m.keys, key)
	ok := key == m.valid
	if !ok {
		m.refused++
	} else if r.URL.Path == "/v1/messages" {
		m.answers++
	}
	m.mu.Unlock()
	switch {
	case !ok:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
	case r.URL.Path == "/v1/messages/count_tokens":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"input_tokens":50000}`)
	default:
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
	}
}

func (m *messagesAPI) counts() (keys []string, refused, answers int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.keys...), m.refused, m.answers
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
	api := newMessagesAPI(t, oldKey)

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
	cfg := baton.Config{Providers: []baton.Provider{anthropic.Provider()}, KeyStore: countedStore(emu.URL, &counter)}
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
	keys, refused, answers := api.counts()
	if refused != 0 || len(keys) == 0 || !all(keys, oldKey) {
		t.Fatalf("before the rotation: %d refused, keys %q; want every call with the stored key", refused, keys)
	}
	if got := facts(s, reducer.ContextCompacted); got == 0 {
		var types []reducer.Type
		for _, f := range s.Facts() {
			types = append(types, f.Type)
		}
		t.Fatalf("no compaction ran (%d model answers, facts %v); the test wants a snapshot", answers, types)
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
	keys, refused, _ = api.counts()
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
	other, err := baton.NewOn(ctx, cfg, kit.App.Env, kit.App.Clients, log)
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
	noKeyStored(t, kit.App, oldKey, newKey)
}

// countedStore is the key store of keystore.AWS on clients whose requests
// c counts.
func countedStore(endpoint string, c *awsenv.Counter) baton.KeyStore {
	return func(*awsenv.Clients) apikey.Fetcher { return keystore.AWS()(awsenv.Counted(endpoint, c)) }
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
// failing when one holds a key; it also wants a snapshot among them.
func noKeyStored(t *testing.T, a *baton.App, keys ...string) {
	t.Helper()
	ctx := context.Background()
	items := 0
	p := dynamodb.NewScanPaginator(a.Clients.DynamoDB, &dynamodb.ScanInput{TableName: aws.String(a.Env.Table)})
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
	lp := s3.NewListObjectsV2Paginator(a.Clients.S3, &s3.ListObjectsV2Input{Bucket: aws.String(a.Env.Bucket)})
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
			out, err := a.Clients.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(a.Env.Bucket), Key: o.Key})
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
	if items == 0 || objects == 0 || snapshots == 0 {
		t.Fatalf("scanned %d items and read %d objects (%d snapshots); want some of each", items, objects, snapshots)
	}
	t.Logf("no key in %d table items or %d objects (%d snapshots)", items, objects, snapshots)
}
