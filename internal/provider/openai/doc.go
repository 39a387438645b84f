// Package openai implements model.Model on OpenAI-compatible chat
// completions (OpenAI, vLLM, Ollama and the like): it streams one step
// through the official SDK, accumulating tool calls by index, reading
// non-standard reasoning deltas, and mapping finish reasons, usage and errors.
package openai
