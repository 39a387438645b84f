// Package chat serves the chat endpoint a Vercel AI SDK client (useChat
// with the stock DefaultChatTransport) talks to: POST /chat turns the
// client's new message or approval answers into session facts and answers
// with the turn's UI message stream, GET /chat/{id}/stream resumes it (204
// for a chat the caller has not), POST /chat/{id}/stop cancels it, and GET
// /chat/{id}/messages gives the chat back as UIMessage[], so an app shows
// its history after a reload. The chat id is the session id, and each
// stream and message list is shaped for the AI SDK major the client names.
package chat
