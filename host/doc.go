// Package host runs a program's agents on AWS: it builds an App from a
// Config (the agents and tools of package baton, the providers and
// clients the program registers) and the resources template.yaml
// deploys, and gives the handlers of the three Lambda functions
// (operator, resume, tick). Main is a function's whole main:
//
//	func main() {
//		host.Main(host.ResumeFunction, host.Config{
//			Agents:    []baton.Agent{desk},
//			Providers: providers.All(),
//			MCP:       providers.MCP(),
//		})
//	}
//
// New builds the App of a deployed function from its environment; NewOn
// builds it on Resources a program makes itself (the dev server,
// batontest), reached with an aws.Config.
package host
