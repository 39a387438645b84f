// Package lambdahttp runs an http.Handler as the Lambda function behind an
// API Gateway HTTP API (payload format 2.0): each event becomes an
// *http.Request, and the handler's buffered answer becomes the response.
// It knows nothing of baton's API; an option moves the authorizer's claims
// into the request context.
package lambdahttp
