// Package provision reads the SAM template (template.yaml) and creates the
// same DynamoDB table, S3 bucket and SQS queues on LocalStack, kumo or any
// AWS endpoint, so local resources are derived from the template and cannot
// drift from it; it refuses template properties it does not know how to honour.
//
// The template is parsed in two steps: gopkg.in/yaml.v3 decodes the YAML and
// rewrites CloudFormation's short-form tags (!Ref, !GetAtt, !Sub, ...) into
// their long JSON form (Decode), and github.com/awslabs/goformation/v7 parses
// that JSON into typed resources (Parse) with every intrinsic rendered as a
// readable string such as "!Ref SessionsTable". goformation's own YAML entry
// point is not used because it registers its tag handlers in a package-level
// map on every call, which races when templates are parsed concurrently.
package provision
