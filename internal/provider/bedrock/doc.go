// Package bedrock implements model.Model on Amazon Bedrock's ConverseStream
// API: it streams one step through the AWS SDK, turning text, reasoning
// (with its signature) and toolUse blocks into model events and mapping stop
// reasons, usage and exceptions. Retries are left to the turn runner.
package bedrock
