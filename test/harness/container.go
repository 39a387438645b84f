package harness

import (
	"net/http/httptest"
	"testing"
)

// Container is one warm execution environment of the operator function:
// a single process of its bootstrap with the stack's environment, behind a
// front door of its own with the stack's limits. Every request to URL
// reaches that process, so what it keeps between invocations (the JWKS's
// cached keys, for one) carries over, as in a warm Lambda container; two
// Containers are two such environments of one function, side by side.
type Container struct {
	// URL is the container's front door (no trailing slash).
	URL     string
	Front   *Front
	Runtime *Runtime
}

// WarmOperator starts one more operator execution environment for d, kept
// until t ends. Its output is shown only if t fails.
func (d *Deployed) WarmOperator(t testing.TB) *Container {
	t.Helper()
	out := &lockedBuffer{}
	rt, err := StartRuntime(RuntimeConfig{
		Name: "operator", Bootstrap: deployedBootstraps(t)["operator"], Env: d.Env,
		Timeout: d.Limits.Timeout, MaxProcs: 1, Output: out,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- warm operator's output ---\n%s", out.tail(100))
		}
	})
	c := &Container{Runtime: rt, Front: &Front{Limits: d.Limits, Runtime: rt, DomainName: d.Front.DomainName}}
	srv := httptest.NewServer(c.Front)
	t.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}
