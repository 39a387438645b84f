// Package files keeps the files of a conversation: it checks a file
// against what an agent accepts (Policy: media types, size, files per
// message; the bytes sniffed so a file cannot lie about its type, and a URL
// fetched only from a public address), stores its bytes in S3 once per
// session and SHA-256 (files/<session>/<sha256>), presigns uploads and
// reads, and loads the bytes into the model input just before a model
// call. Facts and snapshots hold only a reducer.File reference.
package files
