package api

import "time"

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
