package agents

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/baton-run/baton/internal/apikey"
	"github.com/baton-run/baton/internal/model"
)

// SecretEnv is the environment variable whose secret reference (see
// package apikey) gives the key of a provider's agents that name neither
// apiKeyEnv nor apiKeySecret: BATON_ANTHROPIC_KEY_SECRET for "anthropic",
// BATON_OPENAI_KEY_SECRET for "openai". template.yaml sets them on the
// resume function from its AnthropicKeySecret and OpenAIKeySecret
// parameters.
func SecretEnv(provider string) string {
	return "BATON_" + strings.ToUpper(provider) + "_KEY_SECRET"
}

// keyed returns how to build a model of c's provider p with c's key: from
// the secret c names (fetched on the model's first call, through
// Deps.Keys), from APIKeyEnv, or none (the provider's own default). With p
// nil (a provider the program did not link) it only checks the secret's
// reference. It returns the field at fault with an error.
func (b *builder) keyed(c Config, p Provider) (func(context.Context, Config) (model.Model, error), string, error) {
	ref, field, err := b.secretRef(c)
	switch {
	case err != nil:
		return nil, field, err
	case p == nil:
		return nil, "", nil
	case ref != nil:
		if b.deps.Keys == nil {
			return nil, "apiKeySecret", fmt.Errorf("%s: no secret store is registered in this program (host.Config.KeyStore)", ref)
		}
		return func(ctx context.Context, named Config) (model.Model, error) {
			// The configuration is checked now, the key fetched later.
			if _, err := p(ctx, named, ""); err != nil {
				return nil, err
			}
			return apikey.NewModel(b.deps.Keys, *ref, func(ctx context.Context, key string) (model.Model, error) {
				return p(ctx, named, key)
			}), nil
		}, "", nil
	}
	var key string
	if c.APIKeyEnv != "" {
		if key = b.getenv(c.APIKeyEnv); key == "" {
			return nil, "apiKeyEnv", fmt.Errorf("environment variable %s is empty", c.APIKeyEnv)
		}
	}
	return func(ctx context.Context, named Config) (model.Model, error) {
		m, err := p(ctx, named, key)
		if err != nil {
			return nil, err
		}
		return apikey.Redacted(m, key), nil
	}, "", nil
}

// secretRef reads the secret c's key is in: its apiKeySecret, or when it
// names no key, the reference in SecretEnv(c.Provider). Nil means none.
func (b *builder) secretRef(c Config) (*apikey.Ref, string, error) {
	const field = "apiKeySecret"
	if c.APIKeySecret != "" && c.APIKeyEnv != "" {
		return nil, field, errors.New("set apiKeyEnv or apiKeySecret, not both")
	}
	if c.APIKeyEnv != "" {
		return nil, "", nil
	}
	src, from := c.APIKeySecret, ""
	if src == "" {
		from = SecretEnv(c.Provider)
		if src = b.getenv(from); src == "" {
			return nil, "", nil
		}
	}
	ref, err := apikey.ParseRef(src)
	if err != nil {
		if from != "" {
			err = fmt.Errorf("environment variable %s: %w", from, err)
		}
		return nil, field, err
	}
	return &ref, "", nil
}
