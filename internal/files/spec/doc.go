// Package spec is what an agent declares about files and what a tool
// returns them as, with no runtime behind it: the Policy an agent accepts
// files by, and the ToolFile envelope of a tool's output. The authoring
// package (baton) names these; internal/files enforces and stores them.
package spec
