// Package crm is the support desk's customer service, a small MCP server
// over streamable HTTP: get_customer reads a customer's record, add_note
// appends a note to it (idempotent, not destructive). The example's tests
// and the dev server run it on a local port; a deployment points the desk
// at its own CRM.
package crm
