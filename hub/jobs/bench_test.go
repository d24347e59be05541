package jobs

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/internal/x/cputime"
)

func instant(ctx context.Context, c *hub.Call) (*hub.Result, error) { return textResult("ok"), nil }

func benchStores(b *testing.B, fn func(b *testing.B, open opener)) {
	for _, im := range Impls {
		b.Run(im.Name, func(b *testing.B) { fn(b, im.NewOpener(b)) })
	}
}

// BenchmarkEnqueueToCompletion: one job at a time, from Enqueue to its
// succeeded status, with a Run that answers at once.
func BenchmarkEnqueueToCompletion(b *testing.B) {
	benchStores(b, func(b *testing.B, open opener) {
		ctx := context.Background()
		q := NewQueue(open(b, nil), nil)
		startPool(b, &Pool{Store: q, Concurrency: 4, Run: instant, PurgeEvery: -1})
		b.ResetTimer()
		for range b.N {
			id, err := q.Enqueue(ctx, &hub.Call{Tenant: "acme", Name: "t"})
			if err != nil {
				b.Fatal(err)
			}
			for {
				ch := q.Changed()
				j, err := q.Get(ctx, id)
				if err != nil {
					b.Fatal(err)
				}
				if j.Status == Succeeded {
					break
				}
				<-ch
			}
		}
	})
}

// countingStore counts finished jobs.
type countingStore struct {
	Store
	n    atomic.Int64
	want int64
	done chan struct{}
}

func (s *countingStore) Finish(ctx context.Context, id, owner string, out Outcome) error {
	err := s.Store.Finish(ctx, id, owner, out)
	if err == nil && s.n.Add(1) == s.want {
		close(s.done)
	}
	return err
}

// BenchmarkDrain: b.N queued jobs drained by one pool of 4 workers.
func BenchmarkDrain(b *testing.B) {
	benchStores(b, func(b *testing.B, open opener) {
		ctx := context.Background()
		q := NewQueue(open(b, nil), nil)
		for range b.N {
			if _, err := q.Enqueue(ctx, &hub.Call{Tenant: "acme", Name: "t"}); err != nil {
				b.Fatal(err)
			}
		}
		cs := &countingStore{Store: q, want: int64(b.N), done: make(chan struct{})}
		start, cpu := time.Now(), cputime.Process()
		b.ResetTimer()
		startPool(b, &Pool{Store: cs, Concurrency: 4, Run: instant, PurgeEvery: -1, Poll: time.Millisecond})
		<-cs.done
		b.StopTimer()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
		// CPU per job: on a loaded machine jobs/s says more of the others.
		b.ReportMetric(float64((cputime.Process()-cpu).Microseconds())/float64(b.N), "cpu-µs/job")
	})
}
