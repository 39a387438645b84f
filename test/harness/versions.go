package harness

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Versions of the resume function, as a deploy with AutoPublishAlias
// makes them: each a Runtime of its own (the version's code and
// environment, AWS_LAMBDA_FUNCTION_VERSION its number), the SQS wakes
// delivered to the one the alias points at (Deployed.Consume), and
// Lambda's Invoke API for a qualified, asynchronous invocation of any of
// them (Versions), as a turn pinned to its build is handed over.

// StartResume starts another resume function, d's environment with env
// over it (a published version: AWS_LAMBDA_FUNCTION_VERSION, its agent
// file...), kept until t ends. The pump delivers wakes to it once
// Consume names it.
func (d *Deployed) StartResume(t testing.TB, env map[string]string) *Runtime {
	t.Helper()
	e := maps.Clone(d.Env)
	maps.Copy(e, env)
	out := d.logs
	var w io.Writer = out
	if out == nil {
		w = io.Discard
	}
	rt, err := StartRuntime(RuntimeConfig{Name: "resume", Bootstrap: deployedBootstraps(t)["resume"], Env: e, Timeout: 30 * time.Second, Output: w})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	return rt
}

// Consume makes rt the resume function the pump delivers the wake queue
// to: the version the alias points at after a deploy.
func (d *Deployed) Consume(rt *Runtime) { d.consumer.Store(rt) }

// resume is the Runtime the pump delivers to.
func (d *Deployed) resume() *Runtime {
	if rt := d.consumer.Load(); rt != nil {
		return rt
	}
	return d.Resume
}

// Versions models Lambda's Invoke API for the published versions of one
// function, in front of the emulator: POST
// /2015-03-31/functions/{name}/invocations?Qualifier=N with
// X-Amz-Invocation-Type Event queues the payload for version N's Runtime
// and answers 202, as Lambda does; a version it does not hold answers 404
// ResourceNotFoundException. Every other request goes on to the emulator.
// Give a function AWS_ENDPOINT_URL=<URL>.
type Versions struct {
	URL string
	srv *httptest.Server

	mu       sync.Mutex
	versions map[string]*Runtime
	// Invoked are the qualified invocations asked for, by version ("" for
	// none), in order.
	invoked []string
	wg      sync.WaitGroup
}

// NewVersions starts a Versions in front of emulator, stopped when t
// ends.
func NewVersions(t testing.TB, emulator string) *Versions {
	t.Helper()
	u, err := url.Parse(emulator)
	if err != nil || u.Host == "" {
		t.Fatalf("harness: emulator %q: not a URL", emulator)
	}
	v := &Versions{versions: map[string]*Runtime{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	v.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/2015-03-31/functions/") && strings.HasSuffix(r.URL.Path, "/invocations") {
			v.invoke(w, r)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	v.URL = v.srv.URL
	t.Cleanup(func() {
		v.srv.Close()
		v.wg.Wait()
	})
	return v
}

// Publish makes rt version n of the function.
func (v *Versions) Publish(n string, rt *Runtime) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.versions[n] = rt
}

// Delete removes version n, as lambda:DeleteFunction with a qualifier
// does.
func (v *Versions) Delete(n string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.versions, n)
}

// Invoked returns the versions the qualified invocations asked for so
// far, in order.
func (v *Versions) Invoked() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.invoked...)
}

func (v *Versions) invoke(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("Qualifier")
	payload, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	v.mu.Lock()
	v.invoked = append(v.invoked, q)
	rt, ok := v.versions[q]
	v.mu.Unlock()
	name := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/2015-03-31/functions/"), "/invocations")
	if !ok {
		w.Header().Set("X-Amzn-Errortype", "ResourceNotFoundException")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"Type":"User","message":"Function not found: arn:aws:lambda:%s:%s:function:%s:%s"}`, Region, Account, name, q)
		return
	}
	if r.Header.Get("X-Amz-Invocation-Type") != "Event" {
		http.Error(w, "harness: only asynchronous (Event) invocations of a version are modelled", http.StatusBadRequest)
		return
	}
	// Lambda queues an asynchronous invocation and answers 202 at once.
	v.wg.Add(1)
	go func() {
		defer v.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		res, err := rt.Invoke(ctx, payload)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
	}()
	w.WriteHeader(http.StatusAccepted)
}
