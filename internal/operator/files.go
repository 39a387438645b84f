package operator

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/chat"
	"github.com/baton-run/baton/internal/files"
	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/internal/parts"
	"github.com/baton-run/baton/pkg/reducer"
)

// This file holds the session routes of files (internal/files): a
// presigned upload, and a file's read.

// upload handles POST /sessions/{id}/uploads: a presigned PUT of a file
// into the caller's session, checked against its agent's policy.
func (a *sessionRoutes) upload(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := pathID(r, "id", "session")
	if err != nil {
		return err
	}
	id, head, err := a.owned(r.Context(), id, caller)
	if err != nil {
		return err
	}
	var in api.UploadRequest
	if err := decode(w, r, a.maxBody, &in, false); err != nil {
		return err
	}
	out, err := chat.Presign(r.Context(), a.sessions, id, head.Agent, in, time.Now())
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, out)
	return nil
}

// file handles GET /sessions/{id}/files/{sha256}: a redirect (302) to a
// short-lived presigned GET of a file a message of the caller's session
// carries. Another caller's session, and a digest no message names, are
// 404.
func (a *sessionRoutes) file(w http.ResponseWriter, r *http.Request, caller string) error {
	id, err := a.ownedID(r, caller)
	if err != nil {
		return err
	}
	sha := r.PathValue("sha256")
	facts, err := a.sessions.Facts(r.Context(), id, 0)
	if err != nil {
		return err
	}
	for _, f := range facts {
		if f.Message == nil {
			continue
		}
		if i := slices.IndexFunc(f.Message.Files, func(x reducer.File) bool { return x.SHA256 == sha }); i >= 0 && a.sessions.Files != nil {
			u, err := a.sessions.Files.URL(r.Context(), id, f.Message.Files[i])
			if err != nil {
				return err
			}
			w.Header().Set("Cache-Control", "private, no-store")
			http.Redirect(w, r, u, http.StatusFound)
			return nil
		}
	}
	return httpjson.Refuse(http.StatusNotFound, "file not found")
}

// exportFiles are the files export ex names (its messages' and its tools'
// outputs'), once per digest, each with a presigned GET.
func (a *sessionRoutes) exportFiles(ctx context.Context, id string, ex api.Export) ([]api.ExportedFile, error) {
	if a.sessions.Files == nil {
		return nil, nil
	}
	var refs []reducer.File
	for _, f := range ex.Facts {
		if f.Message != nil {
			refs = append(refs, f.Message.Files...)
		}
	}
	for _, t := range ex.Streams {
		for _, p := range t.Parts {
			if p.Type == parts.ToolOutputAvailable {
				if _, fs, ok := files.ToolFiles(p.Output); ok {
					refs = append(refs, fs...)
				}
			}
		}
	}
	var out []api.ExportedFile
	seen := map[string]bool{}
	for _, f := range refs {
		if seen[f.SHA256] {
			continue
		}
		seen[f.SHA256] = true
		u, err := a.sessions.Files.URL(ctx, id, f)
		if err != nil {
			return nil, err
		}
		out = append(out, api.ExportedFile{File: f, URL: u})
	}
	return out, nil
}
