// Package claimscli is resource claims as the baton command line shows and
// releases them, on package api alone (no storage SDK, like package cli,
// which parses the commands' arguments and calls it): a session's grants
// and what blocks its turn (Show), the release of a grant an ended turn
// or a deleted session left (Release), and the caller's orphans (Orphans).
package claimscli
