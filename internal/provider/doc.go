// Package provider holds what baton's model providers share: classifying a
// provider's failure (an HTTP status, an error code, a broken connection or
// stream) into a *model.Error, reading retry-after hints, checking that
// every tool call in a conversation is answered, and normalising tool inputs
// and results. The providers themselves live in its subpackages.
package provider
