package operator

import (
	"github.com/baton-run/baton/internal/chat"
	"github.com/baton-run/baton/internal/httpjson"
)

// corsPolicy is the session routes' CORS policy, for the browser origins
// the chat allows (Config.Chat.AllowedOrigins): a browser app calls both,
// an AI SDK app answering approvals through POST
// /sessions/{id}/approvals/{approvalId}. It allows the methods the session
// routes take and the headers their clients send.
func corsPolicy(origins []string) httpjson.CORS {
	return httpjson.CORS{
		Origins: origins,
		Methods: "GET, POST, PUT, DELETE, OPTIONS",
		Headers: "Content-Type, Authorization, Idempotency-Key, " + chat.VersionHeader + ", X-Baton-Operator, traceparent",
		Expose:  "X-Vercel-AI-UI-Message-Stream",
	}
}
