package agents_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/baton-run/baton/internal/agents"
	"github.com/baton-run/baton/internal/apikey"
	"github.com/baton-run/baton/internal/model"
)

// keyStore is a Fetcher on a map; the cache's and the stores' own tests
// are in internal/apikey and internal/apikey/awsstore.
type keyStore map[apikey.Ref]string

func (s keyStore) Fetch(_ context.Context, ref apikey.Ref) (string, error) { return s[ref], nil }

// keyDeps has a "fake" provider recording the keys it is built with, the
// environment env, and a key store holding two keys.
func keyDeps(env map[string]string, built *[]string) agents.Deps {
	return agents.Deps{
		Providers: map[string]agents.Provider{
			"fake": func(_ context.Context, c agents.Config, key string) (model.Model, error) {
				*built = append(*built, key)
				return model.ParseScript([]byte(inlineScript))
			},
		},
		Getenv: func(k string) string { return env[k] },
		Keys: apikey.NewCache(keyStore{
			{Store: apikey.SecretsManager, ID: "baton/fake"}:  "sk-from-secret",
			{Store: apikey.ParameterStore, ID: "/baton/fake"}: "sk-from-parameter",
		}),
	}
}

func loadKeyed(t *testing.T, config string, d agents.Deps) (model.Model, error) {
	t.Helper()
	fsys := fstest.MapFS{"agents.json": {Data: []byte(config)}}
	m, err := agents.Load(context.Background(), fsys, "agents.json", d)
	if err != nil {
		return nil, err
	}
	return m["a"].Model, nil
}

// TestAPIKeySecret checks where an agent's key comes from: apiKeySecret,
// else BATON_<PROVIDER>_KEY_SECRET, fetched on the first call; apiKeyEnv
// wins over the provider's default; the build never fetches.
func TestAPIKeySecret(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		env          map[string]string
		want         string // the key of the first call
	}{
		{name: "apiKeySecret", config: one(`{"provider":"fake","model":"x","apiKeySecret":"baton/fake"}`), want: "sk-from-secret"},
		{name: "apiKeySecret ssm", config: one(`{"provider":"fake","model":"x","apiKeySecret":"ssm:/baton/fake"}`), want: "sk-from-parameter"},
		{name: "provider default", config: one(`{"provider":"fake","model":"x"}`),
			env: map[string]string{"BATON_FAKE_KEY_SECRET": "ssm:/baton/fake"}, want: "sk-from-parameter"},
		{name: "apiKeySecret over the default", config: one(`{"provider":"fake","model":"x","apiKeySecret":"baton/fake"}`),
			env: map[string]string{"BATON_FAKE_KEY_SECRET": "ssm:/baton/fake"}, want: "sk-from-secret"},
		{name: "apiKeyEnv over the default", config: one(`{"provider":"fake","model":"x","apiKeyEnv":"FAKE_KEY"}`),
			env: map[string]string{"BATON_FAKE_KEY_SECRET": "ssm:/baton/fake", "FAKE_KEY": "sk-env"}, want: "sk-env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var built []string
			m, err := loadKeyed(t, tc.config, keyDeps(tc.env, &built))
			if err != nil {
				t.Fatal(err)
			}
			if _, secret := m.(*apikey.Model); secret != strings.HasPrefix(tc.want, "sk-from") {
				t.Fatalf("model %T for key %s", m, tc.want)
			}
			if secret := strings.HasPrefix(tc.want, "sk-from"); secret && (len(built) != 1 || built[0] != "") {
				t.Fatalf("the build made models with keys %q, want one, with none, to check the configuration", built)
			}
			for _, err := range m.Stream(context.Background(), model.Request{}) {
				if err != nil {
					t.Fatal(err)
				}
			}
			if got := built[len(built)-1]; got != tc.want {
				t.Fatalf("the first call's model has key %q, want %q", got, tc.want)
			}
		})
	}
}

// TestAPIKeySecretErrors checks the configuration errors of a key named
// by secret, each at its agent's apiKeySecret field.
func TestAPIKeySecretErrors(t *testing.T) {
	for _, tc := range []struct {
		name, config, msg string
		env               map[string]string
		noStore           bool
	}{
		{name: "both", config: one(`{"provider":"fake","model":"x","apiKeyEnv":"FAKE_KEY","apiKeySecret":"baton/fake"}`), msg: "not both"},
		{name: "not a secret ARN", config: one(`{"provider":"fake","model":"x","apiKeySecret":"arn:aws:s3:::bucket"}`), msg: `service "s3"`},
		{name: "empty ssm name", config: one(`{"provider":"fake","model":"x","apiKeySecret":"ssm:"}`), msg: "ssm:<parameter name>"},
		{name: "bad default", config: one(`{"provider":"fake","model":"x"}`), env: map[string]string{"BATON_FAKE_KEY_SECRET": "arn:aws:iam::1:role/x"},
			msg: "environment variable BATON_FAKE_KEY_SECRET"},
		{name: "no store", config: one(`{"provider":"fake","model":"x","apiKeySecret":"baton/fake"}`), noStore: true, msg: "no secret store"},
		// A provider the program did not link still has its reference checked.
		{name: "unlinked", config: one(`{"provider":"anthropic","model":"x","apiKeySecret":"arn:aws:sqs:us-east-1:1:q"}`), msg: `service "sqs"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var built []string
			d := keyDeps(tc.env, &built)
			if tc.noStore {
				d.Keys = nil
			}
			_, err := loadKeyed(t, tc.config, d)
			all := configErrors(err)
			if len(all) != 1 || all[0].Agent != "a" || all[0].Field != "apiKeySecret" || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want one error at a's apiKeySecret saying %q", err, tc.msg)
			}
		})
	}
}

// quoting is a provider's model that refuses its key, quoting it.
type quoting struct{ key string }

func (q quoting) Stream(context.Context, model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		yield(model.Event{}, &model.Error{Kind: model.Auth, Status: 401, Err: errors.New("Incorrect API key provided: " + q.key)})
	}
}

// TestAPIKeyRedacted checks that a provider's error quoting the key has it
// redacted, for a key from apiKeyEnv as for one from a secret.
func TestAPIKeyRedacted(t *testing.T) {
	for _, body := range []string{
		`{"provider":"quoting","model":"x","apiKeyEnv":"FAKE_KEY"}`,
		`{"provider":"quoting","model":"x","apiKeySecret":"baton/fake"}`,
	} {
		var built []string
		d := keyDeps(map[string]string{"FAKE_KEY": "sk-from-env"}, &built)
		d.Providers["quoting"] = func(_ context.Context, _ agents.Config, key string) (model.Model, error) { return quoting{key}, nil }
		m, err := loadKeyed(t, one(body), d)
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range m.Stream(context.Background(), model.Request{}) {
			if model.KindOf(err) != model.Auth || strings.Contains(err.Error(), "sk-from") || !strings.Contains(err.Error(), "[redacted]") {
				t.Errorf("%s: %v, want model.Auth with the key redacted", body, err)
			}
		}
	}
}
