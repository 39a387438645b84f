// Package parts defines the stream part vocabulary of a baton turn: the
// parts of the Vercel AI SDK UI message stream protocol and how a turn maps
// onto them. It has no AWS dependency, so the model seam and the providers
// can speak it without the stores.
package parts
