package baton

// The AWS SAM template deploys the three functions with their table, bucket
// and queues. internal/provision reads the same template to create matching
// resources on LocalStack or kumo, so deployed and local resources cannot
// drift.

import _ "embed"

//go:embed template.yaml
var template string

//go:embed Makefile
var makefile string

// Makefile returns baton's Makefile (the build, run and deploy targets the
// template's makefile build method calls), a fresh copy per call. baton
// init derives a project's Makefile from it.
func Makefile() []byte { return []byte(makefile) }

// Template returns the AWS SAM template (template.yaml), a fresh copy per call.
func Template() []byte { return []byte(template) }
