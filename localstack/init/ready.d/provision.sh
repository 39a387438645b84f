#!/bin/bash
# Creates baton's table, bucket and queues in LocalStack (a ready.d init hook),
# the same ones internal/provision.Provision creates from template.yaml. The JSON
# blocks below mirror template.yaml; test/template_test.go
# (TestLocalStackScriptMatchesTemplate) fails when they drift from it, so edit
# both together. Safe to run again: every step converges.
set -euo pipefail

# awslocal talks to this LocalStack; any key id selects account 000000000000.
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}"
export AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"

# provision.DefaultNames()
TABLE=baton-sessions
BUCKET=baton-streams
QUEUE=baton-wakes
DLQ=baton-wakes-dlq

# SessionsTable
TABLE_JSON=$(cat <<'TABLE_JSON'
{
  "BillingMode": "PAY_PER_REQUEST",
  "AttributeDefinitions": [
    {"AttributeName": "pk", "AttributeType": "S"},
    {"AttributeName": "sk", "AttributeType": "N"},
    {"AttributeName": "owner", "AttributeType": "S"},
    {"AttributeName": "created", "AttributeType": "S"},
    {"AttributeName": "dueShard", "AttributeType": "S"},
    {"AttributeName": "due", "AttributeType": "N"}
  ],
  "KeySchema": [
    {"AttributeName": "pk", "KeyType": "HASH"},
    {"AttributeName": "sk", "KeyType": "RANGE"}
  ],
  "GlobalSecondaryIndexes": [
    {
      "IndexName": "byOwner",
      "KeySchema": [
        {"AttributeName": "owner", "KeyType": "HASH"},
        {"AttributeName": "created", "KeyType": "RANGE"}
      ],
      "Projection": {"ProjectionType": "ALL"}
    },
    {
      "IndexName": "byDue",
      "KeySchema": [
        {"AttributeName": "dueShard", "KeyType": "HASH"},
        {"AttributeName": "due", "KeyType": "RANGE"}
      ],
      "Projection": {"ProjectionType": "ALL"}
    }
  ]
}
TABLE_JSON
)
if ! awslocal dynamodb describe-table --table-name "$TABLE" >/dev/null 2>&1; then
  awslocal dynamodb create-table --table-name "$TABLE" --cli-input-json "$TABLE_JSON" >/dev/null
fi
awslocal dynamodb wait table-exists --table-name "$TABLE"

# StreamsBucket (its lifecycle rule and OwnershipControls are left out, as
# internal/provision leaves them out: they change nothing baton does locally).
ENCRYPTION_JSON=$(cat <<'ENCRYPTION_JSON'
{"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}
ENCRYPTION_JSON
)
PUBLIC_ACCESS_BLOCK_JSON=$(cat <<'PUBLIC_ACCESS_BLOCK_JSON'
{"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true}
PUBLIC_ACCESS_BLOCK_JSON
)
if ! awslocal s3api head-bucket --bucket "$BUCKET" >/dev/null 2>&1; then
  awslocal s3api create-bucket --bucket "$BUCKET" >/dev/null
fi
awslocal s3api put-bucket-encryption --bucket "$BUCKET" --server-side-encryption-configuration "$ENCRYPTION_JSON"
awslocal s3api put-public-access-block --bucket "$BUCKET" --public-access-block-configuration "$PUBLIC_ACCESS_BLOCK_JSON"

# WakeDLQ
DLQ_ATTRIBUTES_JSON=$(cat <<'DLQ_ATTRIBUTES_JSON'
{"MessageRetentionPeriod": "1209600", "SqsManagedSseEnabled": "true"}
DLQ_ATTRIBUTES_JSON
)
DLQ_URL=$(awslocal sqs create-queue --queue-name "$DLQ" --query QueueUrl --output text)
awslocal sqs set-queue-attributes --queue-url "$DLQ_URL" --attributes "$DLQ_ATTRIBUTES_JSON"
DLQ_ARN=$(awslocal sqs get-queue-attributes --queue-url "$DLQ_URL" --attribute-names QueueArn --query Attributes.QueueArn --output text)

# WakeQueue, redriving to WakeDLQ (${DLQ_ARN} is expanded here).
QUEUE_ATTRIBUTES_JSON=$(cat <<QUEUE_ATTRIBUTES_JSON
{
  "VisibilityTimeout": "5400",
  "MessageRetentionPeriod": "345600",
  "SqsManagedSseEnabled": "true",
  "RedrivePolicy": "{\"deadLetterTargetArn\":\"${DLQ_ARN}\",\"maxReceiveCount\":10}"
}
QUEUE_ATTRIBUTES_JSON
)
QUEUE_URL=$(awslocal sqs create-queue --queue-name "$QUEUE" --query QueueUrl --output text)
awslocal sqs set-queue-attributes --queue-url "$QUEUE_URL" --attributes "$QUEUE_ATTRIBUTES_JSON"

echo "baton: table $TABLE, bucket $BUCKET, queue $QUEUE_URL (DLQ $DLQ_URL)"
