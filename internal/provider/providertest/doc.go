// Package providertest helps test model providers against recorded wire
// traffic: a Server replays scripted HTTP responses (streamed chunk by chunk,
// optionally cut off) and records the requests it got, and fixtures give a
// conversation with answered and denied tool calls.
package providertest
