package wake

import (
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Event shapes received messages as the event an SQS event source mapping
// invokes a function with: one record per message, with its id, receipt
// handle, body and attributes, the queue's ARN and the region.
func Event(msgs []sqstypes.Message, arn, region string) events.SQSEvent {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, 0, len(msgs))}
	for _, m := range msgs {
		rec := events.SQSMessage{
			MessageId:              aws.ToString(m.MessageId),
			ReceiptHandle:          aws.ToString(m.ReceiptHandle),
			Body:                   aws.ToString(m.Body),
			Md5OfBody:              aws.ToString(m.MD5OfBody),
			Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
			Attributes:             make(map[string]string, len(m.Attributes)),
			MessageAttributes:      make(map[string]events.SQSMessageAttribute, len(m.MessageAttributes)),
			EventSource:            "aws:sqs",
			EventSourceARN:         arn,
			AWSRegion:              region,
		}
		for k, v := range m.Attributes {
			rec.Attributes[k] = v
		}
		for k, v := range m.MessageAttributes {
			rec.MessageAttributes[k] = events.SQSMessageAttribute{
				StringValue:      v.StringValue,
				BinaryValue:      v.BinaryValue,
				StringListValues: v.StringListValues,
				BinaryListValues: v.BinaryListValues,
				DataType:         aws.ToString(v.DataType),
			}
		}
		ev.Records = append(ev.Records, rec)
	}
	return ev
}
