package agents_test

import (
	"errors"
	"testing"

	"github.com/baton-run/baton/internal/agents"
)

// TestFilesConfig: an agent file's files policy loads onto the agent (and
// the session store's FilePolicy); absent, the default; a bad one is
// refused at load naming "files".
func TestFilesConfig(t *testing.T) {
	m, err := loadSpend(t, scripted(`"files":{"types":["image/*","text/csv"],"maxBytes":1000,"maxFiles":2,"fetchURLs":true}`))
	if err != nil {
		t.Fatal(err)
	}
	p := m.FilePolicy("a")
	if !p.Accepts("image/png") || !p.Accepts("text/csv") || p.Accepts("application/pdf") || p.MaxBytes != 1000 || p.MaxFiles != 2 || !p.FetchURLs {
		t.Errorf("files policy %+v", p)
	}
	if m, err = loadSpend(t, scripted("")); err != nil {
		t.Fatal(err)
	}
	if p := m.FilePolicy("a"); !p.Accepts("application/pdf") || p.Accepts("text/html") || p.Resolved().MaxBytes != 20<<20 {
		t.Errorf("default files policy %+v", p.Resolved())
	}
	for _, bad := range []string{`"files":{"types":["png"]}`, `"files":{"maxBytes":-1}`} {
		_, err := loadSpend(t, scripted(bad))
		var ce *agents.ConfigError
		if !errors.As(err, &ce) || ce.Field != "files" {
			t.Errorf("%s: %v, want a ConfigError on files", bad, err)
		}
	}
}
