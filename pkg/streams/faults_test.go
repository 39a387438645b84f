package streams

import (
	"errors"
	"testing"

	"github.com/baton-run/baton/internal/awsenv"
	"github.com/baton-run/baton/internal/faults"
)

// storeFaults are the faults every S3 write is tested under. A transient
// one is retried and the write lands once; a lost response is recognised
// when the retry finds the key taken by the same bytes; a persistent fault
// fails with a transient error that is not a lost race.
var storeFaults = []struct {
	name    string
	rule    faults.Rule
	wantErr bool
}{
	{"503 SlowDown twice", faults.Rule{Times: 2, Fault: faults.SlowDown}, false},
	{"500 twice", faults.Rule{Times: 2, Fault: faults.ServerError}, false},
	{"timeout twice", faults.Rule{Times: 2, Fault: faults.Timeout}, false},
	{"response lost", faults.Rule{Times: 1, Fault: faults.LostResponse}, false},
	{"every response lost", faults.Rule{Fault: faults.LostResponse}, false},
	{"503 SlowDown for good", faults.Rule{Fault: faults.SlowDown}, true},
}

func faultyStore(t *testing.T) (*Store, *faults.Transport) {
	t.Helper()
	ft := faults.New(nil)
	return New(faults.Clients(testEnv.Emu.URL, ft).S3, testEnv.Bucket), ft
}

func TestChunkWriteThroughFaults(t *testing.T) {
	for _, c := range storeFaults {
		t.Run(c.name, func(t *testing.T) {
			store, ft := faultyStore(t)
			sess := session()
			k := store.Open(sess, "t1")
			mustAppend(t, k, text("b0", "hello"))
			rule := c.rule
			rule.Op, rule.Path = "s3:PutObject", "/streams/"
			ft.Set(rule)
			err := k.Flush(t.Context())
			ft.Set()
			if ft.Count("s3:PutObject") == 0 {
				t.Fatal("no fault injected")
			}
			if IsStale(err) {
				t.Fatalf("flush: %v: a fault taken for a lost race", err)
			}
			if (err != nil) != c.wantErr {
				t.Fatalf("flush: %v, want error %v", err, c.wantErr)
			}
			if err != nil {
				if !awsenv.Transient(err) {
					t.Errorf("flush: %v, want a transient error", err)
				}
				if k.Buffered() != 1 {
					t.Fatalf("%d parts buffered after a failed flush, want 1", k.Buffered())
				}
				if keys := chunkKeys(t, sess, "t1"); len(keys) != 0 {
					t.Fatalf("chunks %v after a failed flush", keys)
				}
				mustFlush(t, k) // the fault is gone: the retry writes it
			}
			if keys := chunkKeys(t, sess, "t1"); len(keys) != 1 || k.Next() != 1 || k.Buffered() != 0 {
				t.Fatalf("chunks %v, next %d, buffered %d; want one chunk", keys, k.Next(), k.Buffered())
			}
			if got := string(rawChunk(t, sess, "t1", 0)); got != `{"parts":[{"type":"text-delta","id":"b0","delta":"hello"}]}` {
				t.Fatalf("chunk 0 = %s", got)
			}
		})
	}
}

func TestSnapshotWriteThroughFaults(t *testing.T) {
	type snap struct {
		Seq int64 `json:"seq"`
	}
	for _, c := range storeFaults {
		t.Run(c.name, func(t *testing.T) {
			store, ft := faultyStore(t)
			key := SnapshotKey(session(), 7)
			rule := c.rule
			rule.Op, rule.Path = "s3:PutObject", "/snapshots/"
			ft.Set(rule)
			err := store.PutSnapshot(t.Context(), key, snap{Seq: 7})
			ft.Set()
			if ft.Count("s3:PutObject") == 0 {
				t.Fatal("no fault injected")
			}
			if errors.Is(err, ErrExists) {
				t.Fatalf("put: %v: its own landed write taken for another's", err)
			}
			if (err != nil) != c.wantErr {
				t.Fatalf("put: %v, want error %v", err, c.wantErr)
			}
			var out snap
			err = sharedStore().GetSnapshot(t.Context(), key, &out)
			switch {
			case c.wantErr && !errors.Is(err, ErrNotFound):
				t.Fatalf("get after a failed put: %+v, %v; want ErrNotFound", out, err)
			case !c.wantErr && (err != nil || out.Seq != 7):
				t.Fatalf("get: %+v, %v", out, err)
			}
		})
	}
	t.Run("another body under the key is still ErrExists", func(t *testing.T) {
		store, ft := faultyStore(t)
		key := SnapshotKey(session(), 8)
		if err := store.PutSnapshot(t.Context(), key, snap{Seq: 8}); err != nil {
			t.Fatal(err)
		}
		ft.Set(faults.Rule{Op: "s3:PutObject", Times: 1, Fault: faults.LostResponse})
		if err := store.PutSnapshot(t.Context(), key, snap{Seq: 9}); !errors.Is(err, ErrExists) {
			t.Fatalf("put over another snapshot: %v, want ErrExists", err)
		}
	})
}
