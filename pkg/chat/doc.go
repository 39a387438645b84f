// Package chat serves the chat endpoint a Vercel AI SDK client (useChat
// with the stock DefaultChatTransport) talks to: POST /chat turns the
// client's new message or approval answers into session facts and answers
// with the turn's UI message stream, GET /chat/{id}/stream resumes it, and
// POST /chat/{id}/stop cancels it. A chat id is the caller's own (its
// session is SessionID(caller, chat id)); POST /chat honours
// Idempotency-Key, a retry streaming the same turn again; each stream is
// shaped for the AI SDK major the client names, and sends a comment
// heartbeat while it waits.
package chat
