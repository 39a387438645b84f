// Package chat serves the chat endpoint a Vercel AI SDK client (useChat
// with the stock DefaultChatTransport) talks to: POST /chat turns the
// client's new message or approval answers into session facts and answers
// with the turn's UI message stream, GET /chat/{id}/stream resumes it (204
// for a chat the caller has not), POST /chat/{id}/stop cancels it, and GET
// /chat/{id}/messages gives the chat back as UIMessage[], so an app shows
// its history after a reload. A chat id is the caller's own (its session is
// SessionID(caller, chat id)); POST /chat honours Idempotency-Key, a retry
// streaming the same turn again; each stream and message list is shaped for
// the AI SDK major the client names, and a stream sends a comment heartbeat
// while it waits. Its request and message bodies are package api's
// (ChatRequest, ChatMessage).
package chat
