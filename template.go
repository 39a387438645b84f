package baton

// The AWS SAM template deploys the three functions with their table, bucket
// and queues. pkg/provision reads the same template to create matching
// resources on LocalStack or kumo, so deployed and local resources cannot
// drift.

import _ "embed"

//go:embed template.yaml
var template string

// Template returns the AWS SAM template (template.yaml), a fresh copy per call.
func Template() []byte { return []byte(template) }
