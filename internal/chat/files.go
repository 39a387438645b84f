package chat

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/baton-run/baton/api"
	"github.com/baton-run/baton/internal/files"
	"github.com/baton-run/baton/internal/httpjson"
	"github.com/baton-run/baton/internal/session"
	"github.com/baton-run/baton/pkg/reducer"
)

// This file holds the chat's side of files (internal/files): the upload
// route, and the one presign both APIs answer uploads with.

// upload handles POST /chat/{id}/uploads: a presigned PUT of a file into
// the caller's chat id, which need not exist yet (its session's id is
// derived from the caller), checked against the agent's policy.
func (h *handler) upload(w http.ResponseWriter, r *http.Request, caller string) error {
	ctx, cancel := h.budgeted(r.Context())
	defer cancel()
	chatID := r.PathValue("id")
	if !validID(chatID) {
		return httpjson.Refuse(http.StatusNotFound, "chat not found")
	}
	var in api.UploadRequest
	body, err := httpjson.ReadBody(w, r, h.MaxBody)
	if err != nil {
		return err
	}
	if err := httpjson.DecodeObject(body, &in, false); err != nil {
		return err
	}
	id := SessionID(caller, chatID)
	agent := r.URL.Query().Get("agent")
	if agent == "" {
		agent = h.DefaultAgent
	}
	if head, err := h.Sessions.Head(ctx, id); err == nil {
		agent = head.Agent
	} else if !notFound(err) {
		return err
	}
	out, err := Presign(ctx, h.Sessions, id, agent, in, time.Now())
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, out)
	return nil
}

// Presign is the presigned upload of in into session id of agent, or the
// 4xx of a file the agent does not accept (413 too big, 415 a type it
// does not take, 400 a bad digest or name).
func Presign(ctx context.Context, ss *session.Store, id, agent string, in api.UploadRequest, now time.Time) (api.Upload, error) {
	if ss.Files == nil {
		return api.Upload{}, httpjson.Refuse(http.StatusBadRequest, "this server keeps no files")
	}
	var p files.Policy
	if ss.FilePolicy != nil {
		p = ss.FilePolicy(agent)
	}
	up, err := ss.Files.PresignUpload(ctx, id, p, files.Upload{MediaType: in.MediaType, Size: in.Size, SHA256: in.SHA256, Name: in.Filename}, now)
	if fe := (*files.Error)(nil); errors.As(err, &fe) {
		return api.Upload{}, httpjson.Refuse(fe.Status(), "%v", fe)
	} else if err != nil {
		return api.Upload{}, err
	}
	return api.Upload{Method: up.Method, URL: up.URL, Headers: up.Headers, Expires: up.Expires,
		File: api.FilePart{MediaType: up.File.MediaType, URL: up.File.URL, Filename: up.File.Name}}, nil
}

// Ingest checks the files of a message to session id of agent and stores
// them: their references, or the 4xx naming the file refused (413 too
// big, 415 a type not accepted or one its bytes belie, 400 the rest;
// nothing is stored then).
func Ingest(ctx context.Context, ss *session.Store, id, agent string, in []api.FilePart) ([]reducer.File, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]files.Input, len(in))
	for i, f := range in {
		out[i] = files.Input{MediaType: f.MediaType, URL: f.URL, Name: f.Filename}
	}
	return ingestFiles(ctx, ss, id, agent, out)
}
