package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"time"
)

// FilePart is a file a message carries, as the AI SDK's file part spells
// it: MediaType, and URL a data URL (data:image/png;base64,…), an https
// URL (for an agent that fetches them) or the baton-file: URL of an
// upload (Upload.File).
type FilePart struct {
	MediaType string `json:"mediaType"`
	URL       string `json:"url"`
	Filename  string `json:"filename,omitempty"`
}

// UploadRequest is the body of POST /sessions/{id}/uploads and POST
// /chat/{id}/uploads: the file to upload, by media type, size in bytes
// and SHA-256 (lowercase hex).
type UploadRequest struct {
	MediaType string `json:"mediaType"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"`
	Filename  string `json:"filename,omitempty"`
}

// Upload answers an UploadRequest: PUT the bytes to URL with Headers
// before Expires (the signature covers Content-Length, Content-Type and
// x-amz-checksum-sha256: S3 refuses other bytes), then send File in a
// message.
type Upload struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Expires time.Time         `json:"expires"`
	File    FilePart          `json:"file"`
}

// MaxInline is the largest file Attach sends inline, as a data URL in the
// message's body (base64 makes it a third larger: the body's 1 MiB limit
// holds it with the text); a larger one goes by a presigned upload.
const MaxInline = 512 << 10

// SendMessage posts in to session id: text and files (see Attach).
func (c *Client) SendMessage(ctx context.Context, id string, in MessageRequest) (MessageAccepted, error) {
	var out MessageAccepted
	return out, c.call(ctx, http.MethodPost, sessionPath(id)+"/messages", in, &out)
}

// Upload asks for a presigned upload into session id (POST
// /sessions/{id}/uploads).
func (c *Client) Upload(ctx context.Context, id string, in UploadRequest) (Upload, error) {
	var out Upload
	return out, c.call(ctx, http.MethodPost, sessionPath(id)+"/uploads", in, &out)
}

// Attach makes data, a file of media type mediaType named name, a file
// part of a message to session id: inline as a data URL up to MaxInline,
// else uploaded with a presigned PUT (the bytes go to S3, not through the
// API) and named by its baton-file: URL. The server checks it against the
// agent's policy; a refusal is a *StatusError (413 too big, 415 a type
// the agent does not take).
func (c *Client) Attach(ctx context.Context, id, name, mediaType string, data []byte) (FilePart, error) {
	if len(data) <= MaxInline {
		return FilePart{MediaType: mediaType, URL: "data:" + mediaType + ";base64," + base64.StdEncoding.EncodeToString(data), Filename: name}, nil
	}
	sum := sha256.Sum256(data)
	up, err := c.Upload(ctx, id, UploadRequest{MediaType: mediaType, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), Filename: name})
	if err != nil {
		return FilePart{}, err
	}
	req, err := http.NewRequestWithContext(ctx, up.Method, up.URL, bytes.NewReader(data))
	if err != nil {
		return FilePart{}, fmt.Errorf("upload %s: %w", name, err)
	}
	for k, v := range up.Headers {
		if k != "Content-Length" {
			req.Header.Set(k, v)
		}
	}
	req.ContentLength = int64(len(data))
	hc := c.opts.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return FilePart{}, fmt.Errorf("upload %s: %w", name, unwrapURL(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return FilePart{}, fmt.Errorf("upload %s: S3 answered %s: %s", name, resp.Status, bytes.TrimSpace(b))
	}
	return up.File, nil
}
