package dirbucket_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/baton-run/baton/internal/dirbucket"
	"github.com/baton-run/baton/internal/testenv"
)

// TestListingRules: through the transport, kumo's ordered listing comes
// back with the same keys out of order, and a listing with StartAfter or a
// prefix not ending in "/" is refused with 400 InvalidArgument before it
// reaches kumo.
func TestListingRules(t *testing.T) {
	e := testenv.New(t)
	dir := dirbucket.New(nil, 1)
	client := s3.NewFromConfig(e.Clients().Config, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(e.URL())
		o.UsePathStyle = true
		o.HTTPClient = dir.Client()
	})
	var want []string
	for i := range 6 {
		key := fmt.Sprintf("d/%02d.json", i)
		want = append(want, key)
		if _, err := e.Clients().S3.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(e.Bucket), Key: aws.String(key)}); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		out, err := client.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(e.Bucket), Prefix: aws.String("d/")})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, o := range out.Contents {
			got = append(got, aws.ToString(o.Key))
		}
		if slices.Equal(got, want) {
			t.Fatalf("listing came back in order: %v", got)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("listing has %v, want the keys %v", got, want)
		}
	}
	for _, in := range []*s3.ListObjectsV2Input{
		{Bucket: aws.String(e.Bucket), Prefix: aws.String("d/"), StartAfter: aws.String("d/02.json")},
		{Bucket: aws.String(e.Bucket), Prefix: aws.String("d/0")},
	} {
		_, err := client.ListObjectsV2(t.Context(), in)
		var api smithy.APIError
		if !errors.As(err, &api) || api.ErrorCode() != "InvalidArgument" {
			t.Fatalf("listing %+v: %v, want InvalidArgument", in, err)
		}
	}
	if dir.Shuffled() != 3 || dir.Refused() != 2 {
		t.Fatalf("shuffled %d, refused %d; want 3, 2", dir.Shuffled(), dir.Refused())
	}
}
