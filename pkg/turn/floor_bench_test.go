package turn_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/baton-run/baton/pkg/turn"
)

// BenchmarkStepFloor is the floor under BenchmarkStep's step: one
// conditional S3 PUT (If-None-Match: *) of a step-sized chunk, a new key
// each time, through the same SDK client and in-process emulator that
// BenchmarkStep's invocations use. The chunk's size is the median of the
// step chunks a 10-step turn of BenchmarkStep's script writes, measured in
// the setup (reported as chunk-bytes). A step's ns/step over this ns/put
// is how far a step is from what its checkpoint alone costs.
func BenchmarkStepFloor(b *testing.B) {
	onEmulator(b)
	ctx := context.Background()
	lim := turn.Limits{MaxStepsPerInvocation: 11, MaxStepsPerTurn: 11}
	inv := fresh(b, demoAgent(b, script(b, stepsScript(10)), lim))
	id := newSession(b, inv, "go")
	if out, err := inv.runner.Start(ctx, id); err != nil || out.Kind != turn.Completed {
		b.Fatalf("the turn whose chunks are measured: %+v %v", out, err)
	}
	size := medianChunk(b, inv, id)
	body := bytes.Repeat([]byte{'x'}, size)
	c := inv.clients.S3
	prefix := fmt.Sprintf("floor/%s/", id)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{
			Bucket:      aws.String(env.Bucket),
			Key:         aws.String(fmt.Sprintf("%s%010d.json", prefix, i)),
			Body:        bytes.NewReader(body),
			IfNoneMatch: aws.String("*"),
			ContentType: aws.String("application/json"),
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/put")
	b.ReportMetric(float64(size), "chunk-bytes")
}

// medianChunk is the median size of session id's stream chunks.
func medianChunk(b *testing.B, inv *invocation, id string) int {
	b.Helper()
	out, err := inv.clients.S3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{
		Bucket: aws.String(env.Bucket), Prefix: aws.String("streams/" + id + "/"),
	})
	if err != nil {
		b.Fatal(err)
	}
	var sizes []int
	for _, o := range out.Contents {
		sizes = append(sizes, int(aws.ToInt64(o.Size)))
	}
	if len(sizes) < 10 {
		b.Fatalf("%d chunks for a 10-step turn", len(sizes))
	}
	slices.Sort(sizes)
	return sizes[len(sizes)/2]
}
