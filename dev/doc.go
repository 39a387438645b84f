// Package dev runs a program's baton on one machine, for development: the
// emulator in-process (or AWS_ENDPOINT_URL), the resources of
// baton.Template, the operator API, the resume worker and the tick. It is
// a package of its own so that Lambda mains do not link the emulator.
package dev
