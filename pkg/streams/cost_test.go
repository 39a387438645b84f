package streams

import (
	"fmt"
	"net/http"
	"testing"
)

// Prices in USD per 1,000 requests and per GB (us-east-1, read from the
// AWS S3 pricing page and S3 FAQs on 2026-12-01; S3 Express One Zone after
// its April 2025 price cut). LIST is billed at the PUT rate on both.
const (
	standardPUT, standardGET       = 0.005, 0.0004
	expressPUT, expressGET         = 0.00113, 0.00003
	expressUploadGB, expressReadGB = 0.0032, 0.0006
)

// BenchmarkFollowStep measures, per turn step, the S3 requests of the
// writer (one chunk per step) and of one live reader that reads after its
// cursor once per step, on each store, and the cost of 1,000 such steps.
func BenchmarkFollowStep(b *testing.B) {
	for _, typ := range []BucketType{Standard, Express} {
		b.Run(string(typ), func(b *testing.B) {
			var c contractStore
			if typ == Express {
				c = expressStore(b, NewExpress)
			} else {
				c = standardStore()
			}
			id := session()
			k := c.store.Open(id, "s")
			cur := Cursor("")
			var bytesOut int
			c.rec.reset()
			for i := 0; b.Loop(); i++ {
				p := text(fmt.Sprintf("t%d", i), fmt.Sprintf("step %d: %0200d", i, i))
				if err := k.Append(p); err != nil {
					b.Fatal(err)
				}
				if err := k.Flush(b.Context()); err != nil {
					b.Fatal(err)
				}
				page, err := c.store.Read(b.Context(), id, "s", cur)
				if err != nil || len(page.Entries) != 1 {
					b.Fatalf("read after %q: %d entries, %v", cur, len(page.Entries), err)
				}
				cur = page.Cursor
				bytesOut += len(p.Delta) + 64
			}
			n := float64(b.N)
			puts, gets, lists := float64(c.rec.count(http.MethodPut))/n, float64(c.rec.count(http.MethodGet))/n, float64(c.rec.count("LIST"))/n
			b.ReportMetric(puts, "PUT/step")
			b.ReportMetric(gets, "GET/step")
			b.ReportMetric(lists, "LIST/step")
			var usd float64 // per 1,000 steps
			if typ == Express {
				gb := float64(bytesOut) / n * 1000 / (1 << 30)
				usd = (puts+lists)*expressPUT + gets*expressGET + gb*expressUploadGB + 2*gb*expressReadGB
			} else {
				usd = (puts+lists)*standardPUT + gets*standardGET
			}
			b.ReportMetric(usd, "USD/1k-steps")
		})
	}
}
