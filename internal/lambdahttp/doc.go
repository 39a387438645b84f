// Package lambdahttp runs an http.Handler as a Lambda function behind an
// HTTP front door: each payload 2.0 event (API Gateway HTTP API, or a Lambda
// Function URL, which sends the same shape) becomes an *http.Request.
// Handler buffers the answer whole, as an HTTP API does anyway;
// StreamingHandler streams it through a Function URL with InvokeMode
// RESPONSE_STREAM, every Flush pushing the bytes out. FunctionURL tells the
// two kinds of event apart. It knows nothing of baton's API; an option moves
// the authorizer's claims into the request context.
package lambdahttp
