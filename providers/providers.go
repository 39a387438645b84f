// Package providers registers all of baton's model providers, its MCP
// client and its invoker of lambda tools with a program:
//
//	host.Config{Providers: providers.All(), MCP: providers.MCP(), Lambda: providers.Lambda()}
//
// Importing this package links every provider SDK and the MCP SDK, even
// for a program that names one: a program that wants one imports its
// package instead (providers/anthropic, providers/openai,
// providers/bedrock; providers/mcp for the MCP client, providers/awslambda
// for the Lambda client) and links only that.
// A function that runs no model (the operator, the tick) registers none
// and links no provider SDK. An agent file that names a provider its
// program did not register still loads; that agent's turns fail with
// agents.UnlinkedError.
package providers

import (
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/mcp"
	"github.com/baton-run/baton/internal/mcpserve"
	"github.com/baton-run/baton/providers/anthropic"
	"github.com/baton-run/baton/providers/awslambda"
	"github.com/baton-run/baton/providers/bedrock"
	"github.com/baton-run/baton/providers/keystore"
	pmcp "github.com/baton-run/baton/providers/mcp"
	pmcpserve "github.com/baton-run/baton/providers/mcpserve"
	"github.com/baton-run/baton/providers/openai"
)

// All is every provider baton ships: anthropic, bedrock and openai.
func All() []app.Provider { return []app.Provider{Anthropic(), Bedrock(), OpenAI()} }

// Anthropic is the "anthropic" provider (the Messages API); see package
// providers/anthropic.
func Anthropic() app.Provider { return anthropic.Provider() }

// OpenAI is the "openai" provider (the Responses API); see package
// providers/openai.
func OpenAI() app.Provider { return openai.Provider() }

// Bedrock is the "bedrock" provider (Converse, on the app's AWS config);
// see package providers/bedrock.
func Bedrock() app.Provider { return bedrock.Provider() }

// MCP is baton's MCP client, for host.Config.MCP; see package
// providers/mcp.
func MCP() mcp.Dialer { return pmcp.Client() }

// MCPServer is baton's MCP endpoint, serving agents at /mcp, for
// host.Config.MCPServer; see package providers/mcpserve.
func MCPServer() mcpserve.Server { return pmcpserve.Server() }

// KeyStore is baton's store of model keys, on Secrets Manager and SSM
// Parameter Store, for host.Config.KeyStore; see package
// providers/keystore.
func KeyStore() app.KeyStore { return keystore.AWS() }

// Lambda is baton's invoker of lambda tools, for host.Config.Lambda; see
// package providers/awslambda.
func Lambda() app.Lambda { return awslambda.Invoker() }
