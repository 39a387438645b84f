package chat

import (
	"net/http"

	"github.com/baton-run/baton/internal/httpjson"
)

// cors is the chat's CORS policy, of AllowedOrigins (BATON_CHAT_ORIGINS):
// a browser app on an allowed origin calls the chat's routes, reads the
// UI message stream's header, and sends the AI SDK's version header.
func (o Options) cors() httpjson.CORS {
	return httpjson.CORS{
		Origins: o.AllowedOrigins,
		Methods: "GET, POST, PUT, DELETE, OPTIONS",
		Headers: "Content-Type, Authorization, Idempotency-Key, " + VersionHeader + ", X-Baton-Operator, traceparent",
		Expose:  "X-Vercel-AI-UI-Message-Stream",
	}
}

func (h *handler) cors(w http.ResponseWriter, r *http.Request) bool {
	return h.Options.cors().Apply(w, r)
}
