// Package remote makes the tools an agent file declares that run outside
// the program: an HTTP endpoint (HTTPTool) or a Lambda function
// (LambdaTool, through a LambdaInvoker), each sent the call's input and
// ids as an Envelope. It is apart from package tool so that the authoring
// package, which needs only Tool, links no HTTP client.
package remote
