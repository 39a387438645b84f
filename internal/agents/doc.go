// Package agents loads the agent configuration file: named agents, each with
// a provider and model, a system prompt, tools (built-in, registered by the
// program in Go, declared, or from remote MCP servers), approval rules,
// budgets and an output cap. It validates the whole file at start-up, without
// reaching MCP servers, naming
// the file, the agent and the field of every error, and builds the
// turn.Agents the runner uses. Its approval rules are package tool's Rule,
// which fails closed on input it cannot read. Parsing is strict: unknown
// members and members that appear twice are refused, by path. What Go
// agents share with the file's (the prompts, the output caps, the
// children's limits, the limits, steering, and the tools: their names,
// the fields their claims and approval rules name) is checked by one
// function for both (agentspec.CheckShared, agentspec.Assemble), so that
// both refuse the same values naming the same field; a scripted agent refuses the fields
// only a provider uses (apiKeySecret, apiKeyEnv, baseURL, echoReasoning).
//
// An agent's API key is read from the environment variable its apiKeyEnv
// names, or fetched from the secret its apiKeySecret names (or, when it
// names neither, the one in SecretEnv(provider)), through Deps.Keys and
// package apikey: on the first model call, once per process, and again
// when the provider refuses it.
package agents
