// Package supportdesk is a complete baton program, the kind a user owns:
// a support desk agent that looks orders up, refunds them (an operator
// approves refunds over 100) and keeps notes in a CRM reached over MCP.
// Its functions/*/main.go are its Lambda functions, cmd/dev its local dev
// server, and its tests run through batontest.
package supportdesk
