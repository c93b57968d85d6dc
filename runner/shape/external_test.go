package shape_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/runner/shape"
)

// burst is a load shape written outside the package, through the exported
// interface alone: n workers, each sending its claims back to back, all
// released at once.
type burst struct{ n int }

func (b burst) Conns() int { return b.n }

func (b burst) Dispatch(ctx context.Context, r shape.Run) {
	var wg sync.WaitGroup
	r.Begin()
	for range b.n {
		wg.Go(func() {
			w := r.NewWorker()
			for ctx.Err() == nil {
				seq, ok := r.Claim()
				if !ok {
					return
				}
				shape.Exec(ctx, r, w, seq, time.Now())
			}
		})
	}
	wg.Wait()
}

func (b burst) Split(sh result.Shard, _ time.Duration) (shape.Share, error) {
	n := b.n / sh.Count
	return shape.Share{Load: burst{n}, Concurrency: n, Empty: n == 0}, nil
}

// TestShapeOutsidePackage: a shape from another package is a Dispatcher,
// and splits itself for a shard.
func TestShapeOutsidePackage(t *testing.T) {
	var d shape.Dispatcher = burst{8}
	s, err := d.Split(result.Shard{Index: 1, Count: 4}, 0)
	if err != nil || s.Concurrency != 2 || s.Load.Conns() != 2 || s.Empty {
		t.Fatalf("Split = %+v, %v", s, err)
	}
}
