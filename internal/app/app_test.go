package app_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/pkg/streams"
)

const inline = `{"agents":{"helper":{"provider":"scripted","script":{"steps":[{"text":"hi"}]},"tools":[]}}}`

func TestLoadAgentsFromEverySource(t *testing.T) {
	ctx := context.Background()
	e := testenv.Emulator()

	demo, err := app.LoadAgents(ctx, "", e.Clients)
	if err != nil || !demo.Has("demo") {
		t.Fatalf("embedded demo: %v %v", demo, err)
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "agents.json")
	if err := os.WriteFile(path, []byte(inline), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile, err := app.LoadAgents(ctx, path, e.Clients)
	if err != nil || !fromFile.Has("helper") {
		t.Fatalf("file: %v %v", fromFile, err)
	}

	bucket := strings.ToLower(ids.New("cfg"))
	if _, err := e.Clients.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Clients.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("config/agents.json"), Body: strings.NewReader(inline)}); err != nil {
		t.Fatal(err)
	}
	fromS3, err := app.LoadAgents(ctx, "s3://"+bucket+"/config/agents.json", e.Clients)
	if err != nil || !fromS3.Has("helper") {
		t.Fatalf("s3: %v %v", fromS3, err)
	}

	// Bad sources fail with errors that say what is wrong.
	if _, err := app.LoadAgents(ctx, filepath.Join(dir, "missing.json"), e.Clients); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := app.LoadAgents(ctx, "s3://"+bucket, e.Clients); err == nil || !strings.Contains(err.Error(), "s3://bucket/key") {
		t.Fatalf("bad s3 url: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"agents":{"x":{"provider":"nope"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var ce *agents.ConfigError
	if _, err := app.LoadAgents(ctx, bad, e.Clients); !errors.As(err, &ce) || ce.Agent != "x" || ce.Field != "provider" {
		t.Fatalf("bad config: %v", err)
	}
}

func TestEnvFromOS(t *testing.T) {
	t.Setenv(app.EnvTable, "")
	if _, err := app.EnvFromOS(); err == nil || !strings.Contains(err.Error(), app.EnvTable) {
		t.Fatalf("missing table: %v", err)
	}
	t.Setenv(app.EnvTable, "t")
	t.Setenv(app.EnvBucket, "b")
	t.Setenv(app.EnvQueueURL, "q")
	t.Setenv(app.EnvWakeGrace, "soon")
	if _, err := app.EnvFromOS(); err == nil || !strings.Contains(err.Error(), app.EnvWakeGrace) {
		t.Fatalf("bad grace: %v", err)
	}
	t.Setenv(app.EnvWakeGrace, "90s")
	env, err := app.EnvFromOS()
	if err != nil || env.WakeGrace.Seconds() != 90 || env.Table != "t" {
		t.Fatalf("env = %+v, %v", env, err)
	}
}

// TestStreamBucketType: BATON_STREAM_BUCKET_TYPE picks the stream store;
// an unknown type is refused, and a directory bucket's name (…--x-s3)
// means Express whatever the type says.
func TestStreamBucketType(t *testing.T) {
	base := map[string]string{app.EnvTable: "t", app.EnvBucket: "b", app.EnvQueueURL: "q"}
	env := func(kv ...string) (app.Resources, error) {
		m := maps.Clone(base)
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return app.EnvFrom(func(k string) string { return m[k] })
	}
	for _, c := range []struct {
		kv   []string
		want streams.BucketType
	}{
		{nil, streams.Standard},
		{[]string{app.EnvStreamBucketType, "Express"}, streams.Express},
		{[]string{app.EnvStreamBucketType, "standard"}, streams.Standard},
		{[]string{app.EnvStreamBucket, "turns--use1-az4--x-s3"}, streams.Express},
	} {
		e, err := env(c.kv...)
		if err != nil || e.StreamBucketType != c.want {
			t.Fatalf("%v: type %q, %v; want %q", c.kv, e.StreamBucketType, err, c.want)
		}
		s, err := app.StreamStore(e, nil)
		if err != nil || s.Type() != c.want {
			t.Fatalf("%v: store %v, %v", c.kv, s, err)
		}
	}
	if s, _ := app.StreamStore(app.Resources{Bucket: "b"}, nil); s.Bucket() != "b" {
		t.Fatalf("the stream bucket defaults to BATON_BUCKET, got %s", s.Bucket())
	}
	if _, err := env(app.EnvStreamBucketType, "Glacier"); !errors.Is(err, streams.ErrInvalid) || !strings.Contains(err.Error(), app.EnvStreamBucketType) {
		t.Fatalf("unknown type: %v", err)
	}
	if _, err := env(app.EnvStreamBucketType, "Glacier", app.EnvStreamBucket, "t--use1-az4--x-s3"); !errors.Is(err, streams.ErrInvalid) {
		t.Fatalf("unknown type on a directory bucket: %v", err)
	}
	if _, err := app.StreamStore(app.Resources{Bucket: "b", StreamBucketType: "Glacier"}, nil); !errors.Is(err, streams.ErrInvalid) {
		t.Fatalf("unknown type in Go: %v", err)
	}
}
