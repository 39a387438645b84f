// Package testenv is the one test setup of baton's own tests and of
// batontest: the emulator a test binary shares, and fresh resources (table,
// bucket, wake queue) created on it from the SAM template through
// internal/provision, as the dev server creates its own.
package testenv
