package crm

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/baton-run/baton/providers/mcp"
)

// The server's tools.
const (
	GetCustomer = "get_customer"
	AddNote     = "add_note"
)

// Server is the CRM: customers and their notes.
type Server struct {
	mu    sync.Mutex
	notes map[string][]string
	// keys are the idempotency keys of the notes added, so a rerun of one
	// call adds its note once.
	keys map[string]bool
}

// New returns a CRM with no notes.
func New() *Server { return &Server{notes: map[string][]string{}, keys: map[string]bool{}} }

// Notes returns a customer's notes.
func (s *Server) Notes(customer string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.notes[customer]...)
}

// Handler serves the MCP endpoint.
func (s *Server) Handler() http.Handler {
	m := sdk.NewServer(&sdk.Implementation{Name: "crm", Version: "v1"}, nil)
	no := false
	type who struct {
		Customer string `json:"customer" jsonschema:"the customer's email"`
	}
	type note struct {
		Customer string `json:"customer" jsonschema:"the customer's email"`
		Note     string `json:"note" jsonschema:"what to remember about the customer"`
	}
	sdk.AddTool(m, &sdk.Tool{Name: GetCustomer, Description: "Read a customer's record and notes.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *sdk.CallToolRequest, in who) (*sdk.CallToolResult, map[string]any, error) {
			return nil, map[string]any{"customer": in.Customer, "tier": "gold", "notes": s.Notes(in.Customer)}, nil
		})
	sdk.AddTool(m, &sdk.Tool{Name: AddNote, Description: "Add a note to a customer's record.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: &no, IdempotentHint: true}},
		func(_ context.Context, r *sdk.CallToolRequest, in note) (*sdk.CallToolResult, map[string]any, error) {
			key := fmt.Sprint(r.Params.GetMeta()[mcp.IdempotencyKeyMeta])
			s.mu.Lock()
			defer s.mu.Unlock()
			if !s.keys[key] {
				s.keys[key] = true
				s.notes[in.Customer] = append(s.notes[in.Customer], in.Note)
			}
			return nil, map[string]any{"customer": in.Customer, "notes": len(s.notes[in.Customer])}, nil
		})
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return m }, &sdk.StreamableHTTPOptions{JSONResponse: true})
}
