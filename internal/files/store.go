package files

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/baton-run/baton/pkg/reducer"
)

// S3 is what a Store needs of an S3 client; *s3.Client and
// internal/memstore's Bucket have it.
type S3 interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

// Presigner presigns S3 requests; *s3.PresignClient is one.
type Presigner interface {
	PresignPutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.PresignOptions)) (*v4.PresignedHTTPRequest, error)
	PresignGetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.PresignOptions)) (*v4.PresignedHTTPRequest, error)
}

// Expiry of presigned URLs.
const (
	// UploadExpiry is how long a presigned upload URL is good for.
	UploadExpiry = 15 * time.Minute
	// ReadExpiry is how long a presigned read URL is good for.
	ReadExpiry = 15 * time.Minute
)

// Store keeps files in an S3 bucket, under files/<session>/<sha256>: once
// per session and digest. Keys are per session, not per owner, so a
// session's delete removes its prefix and nothing another session needs,
// with no reference counts to keep in step with the facts.
type Store struct {
	client  S3
	bucket  string
	presign Presigner
	// Fetch fetches the https URLs of agents that allow them.
	Fetch Fetcher
}

// New is a Store on bucket; presign nil presigns nothing (PresignUpload
// and URL fail).
func New(client S3, bucket string, presign Presigner) *Store {
	return &Store{client: client, bucket: bucket, presign: presign}
}

// Key is the object key of the file of digest sha in session.
func Key(session, sha string) string { return "files/" + session + "/" + sha }

// Prefix is the prefix of session's files.
func Prefix(session string) string { return "files/" + session + "/" }

// validSHA reports whether s is a SHA-256 in lowercase hex.
func validSHA(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// pending is a checked file whose bytes are still to store.
type pending struct {
	ref  reducer.File
	data []byte // nil for an upload, already stored
}

// Ingest checks the files of one message against p and stores their
// bytes under session; it returns their references and undo, which
// deletes the objects this call created (call it when the message is
// then not recorded). Every file is checked before anything is stored: a
// refusal is an *Error and stores nothing.
func (s *Store) Ingest(ctx context.Context, session string, p Policy, ins []Input) ([]reducer.File, func(context.Context), error) {
	noop := func(context.Context) {}
	if len(ins) == 0 {
		return nil, noop, nil
	}
	p = p.Resolved()
	if err := checkCount(p, len(ins)); err != nil {
		return nil, noop, err
	}
	var todo []pending
	for i, in := range ins {
		f, err := s.check(ctx, session, p, i, in)
		if err != nil {
			return nil, noop, err
		}
		todo = append(todo, f)
	}
	var created []string
	undo := func(ctx context.Context) {
		for _, k := range created {
			_, _ = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)})
		}
	}
	refs := make([]reducer.File, len(todo))
	for i, f := range todo {
		refs[i] = f.ref
		if f.data == nil {
			continue
		}
		made, err := s.put(ctx, f.ref, f.data)
		if err != nil {
			undo(ctx)
			return nil, noop, err
		}
		if made {
			created = append(created, f.ref.Key)
		}
	}
	return refs, undo, nil
}

// check checks input i and reads its bytes (but an upload's, which are in
// S3 already).
func (s *Store) check(ctx context.Context, session string, p Policy, i int, in Input) (pending, error) {
	name := in.label(i)
	if len(in.Name) > 255 {
		return pending{}, refuse(BadFile, name, "filename is longer than 255 bytes")
	}
	var mt string
	var data []byte
	var err error
	switch {
	case strings.HasPrefix(in.URL, "data:"):
		mt, data, err = decodeData(name, in.MediaType, in.URL, min(p.MaxBytes, MaxInline))
	case strings.HasPrefix(in.URL, UploadScheme):
		return s.uploaded(ctx, session, p, name, in)
	case strings.HasPrefix(in.URL, "https://") || strings.HasPrefix(in.URL, "http://"):
		if !p.FetchURLs {
			return pending{}, refuse(NoFetch, name, "is a URL, and the agent does not fetch URLs: send the bytes (a data URL or an upload)")
		}
		mt, data, err = s.Fetch.fetch(ctx, name, in.URL, min(p.MaxBytes, MaxInline))
		if err == nil && in.MediaType != "" {
			mt = in.MediaType
		}
	default:
		return pending{}, refuse(BadFile, name, "url must be a data URL, an https URL or an upload's %s URL", UploadScheme)
	}
	if err != nil {
		return pending{}, err
	}
	if err := checkDeclared(p, name, mt, int64(len(data))); err != nil {
		return pending{}, err
	}
	if err := sniff(name, mt, data[:min(len(data), 512)]); err != nil {
		return pending{}, err
	}
	sum := sha256.Sum256(data)
	sha := hex.EncodeToString(sum[:])
	return pending{ref: reducer.File{Key: Key(session, sha), MediaType: mt, Size: int64(len(data)), SHA256: sha, Name: in.Name}, data: data}, nil
}

// uploaded checks a file uploaded with a presigned PUT: it is there, of
// an accepted size and type, and its first bytes are of that type.
func (s *Store) uploaded(ctx context.Context, session string, p Policy, name string, in Input) (pending, error) {
	sha := strings.TrimPrefix(in.URL, UploadScheme)
	if !validSHA(sha) {
		return pending{}, refuse(BadFile, name, "url %s does not name an upload: want %s<sha256 in hex>", clip(in.URL), UploadScheme)
	}
	key := Key(session, sha)
	h, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if notFound(err) {
		return pending{}, refuse(BadFile, name, "no upload of sha256 %s in this session: upload it first (its presigned URL)", sha)
	} else if err != nil {
		return pending{}, fmt.Errorf("files: check upload %s: %w", key, err)
	}
	mt := in.MediaType
	if ct := aws.ToString(h.ContentType); ct != "" && mt != "" && ct != mt {
		return pending{}, refuse(Lies, name, "has mediaType %s but was uploaded as %s", mt, ct)
	} else if mt == "" {
		mt = ct
	}
	size := aws.ToInt64(h.ContentLength)
	if err := checkDeclared(p, name, mt, size); err != nil {
		return pending{}, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key), Range: aws.String("bytes=0-511")})
	if err != nil {
		return pending{}, fmt.Errorf("files: read upload %s: %w", key, err)
	}
	head, err := io.ReadAll(io.LimitReader(out.Body, 512))
	out.Body.Close()
	if err != nil {
		return pending{}, fmt.Errorf("files: read upload %s: %w", key, err)
	}
	if err := sniff(name, mt, head); err != nil {
		return pending{}, err
	}
	return pending{ref: reducer.File{Key: key, MediaType: mt, Size: size, SHA256: sha, Name: in.Name}}, nil
}

// put stores data at f.Key unless it is there (the same digest, the same
// bytes); made says this call created it.
func (s *Store) put(ctx context.Context, f reducer.File, data []byte) (bool, error) {
	sum := sha256.Sum256(data)
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(f.Key), Body: bytes.NewReader(data),
		ContentType: aws.String(f.MediaType), ContentLength: aws.Int64(int64(len(data))),
		ChecksumSHA256: aws.String(base64.StdEncoding.EncodeToString(sum[:])),
		IfNoneMatch:    aws.String("*"),
	})
	var ae smithy.APIError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &ae) && (ae.ErrorCode() == "PreconditionFailed" || ae.ErrorCode() == "ConditionalRequestConflict"):
		return false, nil
	}
	return false, fmt.Errorf("files: store %s: %w", f.Key, err)
}

func notFound(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && (ae.ErrorCode() == "NotFound" || ae.ErrorCode() == "NoSuchKey")
}

// Upload is what a client asks to upload: the file's media type, size,
// SHA-256 (hex) and name.
type Upload struct {
	MediaType string `json:"mediaType"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"`
	Name      string `json:"filename,omitempty"`
}

// Presigned is a presigned upload: PUT the bytes to URL with Headers
// (whose Content-Length, Content-Type and x-amz-checksum-sha256 the
// signature covers, so S3 refuses other bytes), then name the file in a
// message by File.
type Presigned struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Expires time.Time         `json:"expires"`
	// File is the file part to send in a message once uploaded.
	File Input `json:"file"`
}

// PresignUpload checks u against p and presigns its PUT into session.
func (s *Store) PresignUpload(ctx context.Context, session string, p Policy, u Upload, now time.Time) (Presigned, error) {
	name := "upload"
	if u.Name != "" {
		name = fmt.Sprintf("%q", clip(u.Name))
	}
	if !validSHA(u.SHA256) {
		return Presigned{}, refuse(BadFile, name, "sha256 must be the file's SHA-256 in lowercase hex (64 characters)")
	}
	if len(u.Name) > 255 {
		return Presigned{}, refuse(BadFile, name, "filename is longer than 255 bytes")
	}
	if err := checkDeclared(p, name, u.MediaType, u.Size); err != nil {
		return Presigned{}, err
	}
	if s.presign == nil {
		return Presigned{}, errors.New("files: this store presigns no uploads")
	}
	raw, _ := hex.DecodeString(u.SHA256)
	sum := base64.StdEncoding.EncodeToString(raw)
	req, err := s.presign.PresignPutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(Key(session, u.SHA256)),
		ContentType: aws.String(u.MediaType), ContentLength: aws.Int64(u.Size), ChecksumSHA256: aws.String(sum),
	}, s3.WithPresignExpires(UploadExpiry))
	if err != nil {
		return Presigned{}, fmt.Errorf("files: presign the upload: %w", err)
	}
	h := map[string]string{"Content-Type": u.MediaType, "Content-Length": fmt.Sprint(u.Size), "x-amz-checksum-sha256": sum}
	for k, v := range req.SignedHeader {
		if k != "Host" && len(v) > 0 {
			h[http.CanonicalHeaderKey(k)] = v[0]
		}
	}
	delete(h, "X-Amz-Checksum-Sha256")
	h["x-amz-checksum-sha256"] = sum
	return Presigned{Method: http.MethodPut, URL: req.URL, Headers: h, Expires: now.Add(UploadExpiry),
		File: Input{MediaType: u.MediaType, URL: UploadScheme + u.SHA256, Name: u.Name}}, nil
}

// URL is a short-lived presigned GET of session's file f, for its owner:
// the caller checks that the session is the requester's.
func (s *Store) URL(ctx context.Context, session string, f reducer.File) (string, error) {
	if s.presign == nil {
		return "", errors.New("files: this store presigns no reads")
	}
	in := &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(Key(session, f.SHA256)), ResponseContentType: aws.String(f.MediaType)}
	if f.Name != "" {
		in.ResponseContentDisposition = aws.String(fmt.Sprintf("inline; filename=%q", f.Name))
	}
	req, err := s.presign.PresignGetObject(ctx, in, s3.WithPresignExpires(ReadExpiry))
	if err != nil {
		return "", fmt.Errorf("files: presign %s: %w", f.SHA256, err)
	}
	return req.URL, nil
}

// Read returns the bytes of session's file f, checked against its digest.
// A session reads only its own copy (files/<session>/<sha256>), also in a
// fork, whose facts name the key the file was first stored at: a fork
// copies its files (CopySession).
func (s *Store) Read(ctx context.Context, session string, f reducer.File) ([]byte, error) {
	key := Key(session, f.SHA256)
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("files: read %s: %w", key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(io.LimitReader(out.Body, f.Size+1))
	if err != nil {
		return nil, fmt.Errorf("files: read %s: %w", key, err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != f.SHA256 {
		return nil, fmt.Errorf("files: read %s: the bytes do not match their sha256", key)
	}
	return data, nil
}

// lister lists keys; *s3.Client and internal/memstore's Bucket have it.
type lister interface {
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// copier copies an object within S3, server-side; *s3.Client has it.
type copier interface {
	CopyObject(ctx context.Context, in *s3.CopyObjectInput, optFns ...func(*s3.Options)) (*s3.CopyObjectOutput, error)
}

// CopySession copies every file of session from into session to (a
// fork): the fork's conversation names them, and it must keep them when
// from is deleted. S3 copies them server-side (a client without
// CopyObject reads and writes them). It is run before the fork's facts
// are written; copying again what is there is no error.
func (s *Store) CopySession(ctx context.Context, from, to string) (int, error) {
	l, ok := s.client.(lister)
	if !ok {
		return 0, errors.New("files: this store cannot list files")
	}
	n := 0
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(Prefix(from))}
	for {
		page, err := l.ListObjectsV2(ctx, in)
		if err != nil {
			return n, fmt.Errorf("files: list the files of %s: %w", from, err)
		}
		for _, o := range page.Contents {
			src := aws.ToString(o.Key)
			dst := Prefix(to) + strings.TrimPrefix(src, Prefix(from))
			if err := s.copy(ctx, src, dst); err != nil {
				return n, fmt.Errorf("files: copy %s to %s: %w", src, dst, err)
			}
			n++
		}
		if !aws.ToBool(page.IsTruncated) {
			return n, nil
		}
		in.ContinuationToken = page.NextContinuationToken
	}
}

func (s *Store) copy(ctx context.Context, src, dst string) error {
	if c, ok := s.client.(copier); ok {
		_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(dst), CopySource: aws.String(s.bucket + "/" + src)})
		return err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(src)})
	if err != nil {
		return err
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return err
	}
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(dst), Body: bytes.NewReader(data), ContentType: out.ContentType})
	return err
}
