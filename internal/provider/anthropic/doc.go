// Package anthropic implements model.Model on the Anthropic Messages API: it
// streams one step through the official SDK, turning text, thinking (with
// its signature) and tool_use blocks into model events and mapping stop
// reasons, usage and errors. Retries are left to the turn runner.
package anthropic
