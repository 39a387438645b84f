package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

// Path is where the console is mounted on the operator API.
const Path = "/console"

//go:embed assets
var assets embed.FS

// csp lets the page load only its own assets and talk only to its own
// origin.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is one embedded file, ready to serve.
type asset struct {
	body  []byte
	ctype string
	etag  string
}

// handler serves the embedded assets under Path.
type handler struct {
	files map[string]asset
}

// Handler serves the console: GET Path redirects to the page,
// Path+"/index.html" (also served at Path+"/"), and Path+"/<file>" are its
// assets. Mount it on both patterns, with
// no authentication: the assets carry no data.
func Handler() http.Handler {
	h := &handler{files: map[string]asset{}}
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embed pattern guarantees the folder
	}
	err = fs.WalkDir(sub, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(sub, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		h.files[name] = asset{body: body, ctype: mime.TypeByExtension(path.Ext(name)),
			etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		panic(err) // embedded files always read
	}
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path == Path {
		// Relative, so that it holds behind an API Gateway stage prefix;
		// to a file, which the greedy route Path/{proxy+} surely matches.
		w.Header().Set("Location", path.Base(Path)+"/index.html")
		w.WriteHeader(http.StatusMovedPermanently)
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, Path+"/")
	if name == "" {
		name = "index.html"
	}
	a, found := h.files[name]
	if !ok || !found {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", a.ctype)
	hd.Set("ETag", a.etag)
	// Revalidate every time, so a deploy is seen at once; unchanged
	// assets cost a 304.
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Content-Security-Policy", csp)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}
