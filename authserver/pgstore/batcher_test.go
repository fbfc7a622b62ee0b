package pgstore

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// gatedBatcher is a batcher whose batches wait for the test: each batch
// sends its inputs on started, then waits for a value on release.
type gatedBatcher struct {
	*batcher[int, int]
	started chan []int
	release chan error
}

func newGatedBatcher(maxBatch, maxQueue int) *gatedBatcher {
	g := &gatedBatcher{started: make(chan []int, 100), release: make(chan error)}
	g.batcher = newBatcher(maxBatch, maxQueue, func(_ context.Context, in []int) ([]int, error) {
		g.started <- slices.Clone(in)
		if err := <-g.release; err != nil {
			return nil, err
		}
		out := make([]int, len(in))
		for i, v := range in {
			out[i] = v * 10
		}
		return out, nil
	})
	return g
}

// waitQueued returns once b holds n queued calls.
func waitQueued[In, Out any](b *batcher[In, Out], n int) {
	for {
		b.mu.Lock()
		l := len(b.queue)
		b.mu.Unlock()
		if l >= n {
			return
		}
		runtime.Gosched()
	}
}

type batchResult struct {
	in, out int
	err     error
}

// start calls do(in) in a goroutine; its result goes to results.
func (g *gatedBatcher) start(ctx context.Context, wg *sync.WaitGroup, in int, results chan<- batchResult) {
	wg.Go(func() {
		out, err := g.do(ctx, in)
		results <- batchResult{in, out, err}
	})
}

// TestBatcher: the first call runs at once and alone; calls that arrive
// while a batch is in flight go together in the next, at most maxBatch at
// a time, each with its own result; a full queue is refused; a batch's
// error reaches all its calls.
func TestBatcher(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		maxBatch int
		queued   int
		batches  [][]int // after the first, [0]
		fail     bool
	}{
		{name: "alone", maxBatch: 64, queued: 0},
		{name: "queued calls go in one batch", maxBatch: 64, queued: 5, batches: [][]int{{1, 2, 3, 4, 5}}},
		{name: "bounded batches", maxBatch: 2, queued: 5, batches: [][]int{{1, 2}, {3, 4}, {5}}},
		{name: "batch error reaches every call", maxBatch: 64, queued: 3, batches: [][]int{{1, 2, 3}}, fail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newGatedBatcher(tc.maxBatch, 16)
			results := make(chan batchResult, 100)
			var wg sync.WaitGroup
			ctx := context.Background()
			g.start(ctx, &wg, 0, results)
			if got := <-g.started; !slices.Equal(got, []int{0}) {
				t.Fatalf("first batch %v, want [0]", got)
			}
			for i := 1; i <= tc.queued; i++ {
				g.start(ctx, &wg, i, results)
				waitQueued(g.batcher, i) // one at a time, so the queue's order is known
			}
			var batchErr error
			if tc.fail {
				batchErr = errors.New("down")
			}
			g.release <- nil
			for _, want := range tc.batches {
				if got := <-g.started; !slices.Equal(got, want) {
					t.Fatalf("batch %v, want %v", got, want)
				}
				g.release <- batchErr
			}
			wg.Wait()
			close(results)
			n := 0
			for r := range results {
				n++
				switch {
				case r.in == 0 && (r.err != nil || r.out != 0):
					t.Errorf("first call: %d, %v", r.out, r.err)
				case r.in > 0 && tc.fail && !errors.Is(r.err, batchErr):
					t.Errorf("call %d: %d, %v, want the batch's error", r.in, r.out, r.err)
				case r.in > 0 && !tc.fail && (r.err != nil || r.out != r.in*10):
					t.Errorf("call %d: %d, %v", r.in, r.out, r.err)
				}
			}
			if n != tc.queued+1 {
				t.Errorf("%d results, want %d", n, tc.queued+1)
			}
			if g.busy || len(g.queue) != 0 {
				t.Errorf("batcher not idle after the calls: busy %v, %d queued", g.busy, len(g.queue))
			}
		})
	}
}

// TestBatcherQueueFull: past maxQueue a call is refused at once with
// errBatchQueueFull, so that it can run alone.
func TestBatcherQueueFull(t *testing.T) {
	t.Parallel()
	g := newGatedBatcher(64, 2)
	results := make(chan batchResult, 10)
	var wg sync.WaitGroup
	ctx := context.Background()
	g.start(ctx, &wg, 0, results)
	<-g.started
	g.start(ctx, &wg, 1, results)
	g.start(ctx, &wg, 2, results)
	waitQueued(g.batcher, 2)
	if _, err := g.do(ctx, 3); !errors.Is(err, errBatchQueueFull) {
		t.Fatalf("do past the queue bound = %v, want errBatchQueueFull", err)
	}
	g.release <- nil
	<-g.started
	g.release <- nil
	wg.Wait()
}

// TestBatcherCancel: a call whose context ends while it is queued returns
// the context's error and is not run; the calls queued after it still
// run, also when it ends just as it is woken to lead the next batch (it
// hands over to the next queued call). A call with a context already done
// runs nothing.
func TestBatcherCancel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		wait bool // wait for the cancelled call to return before the first batch ends
	}{
		{name: "cancelled while queued", wait: true},
		{name: "cancelled as the batch before it ends", wait: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newGatedBatcher(64, 16)
			results := make(chan batchResult, 10)
			var wg sync.WaitGroup
			bg := context.Background()
			g.start(bg, &wg, 0, results)
			<-g.started
			ctx, cancel := context.WithCancel(bg)
			g.start(ctx, &wg, 1, results)
			waitQueued(g.batcher, 1)
			g.start(bg, &wg, 2, results)
			waitQueued(g.batcher, 2)
			cancel()
			if tc.wait {
				// Nothing else can finish before the first batch does.
				if r := <-results; r.in != 1 || !errors.Is(r.err, context.Canceled) {
					t.Fatalf("cancelled call: %+v, want context.Canceled", r)
				}
			}
			g.release <- nil
			if got := <-g.started; !slices.Equal(got, []int{2}) {
				t.Fatalf("batch after the cancelled call %v, want [2]", got)
			}
			g.release <- nil
			wg.Wait()
			close(results)
			for r := range results {
				switch {
				case r.in == 1 && !errors.Is(r.err, context.Canceled):
					t.Errorf("cancelled call: %+v", r)
				case r.in != 1 && (r.err != nil || r.out != r.in*10):
					t.Errorf("call %d: %+v", r.in, r)
				}
			}
			if g.busy || len(g.queue) != 0 {
				t.Errorf("batcher not idle after the calls: busy %v, %d queued", g.busy, len(g.queue))
			}
		})
	}
	t.Run("context done before the call", func(t *testing.T) {
		t.Parallel()
		g := newGatedBatcher(64, 16)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := g.do(ctx, 1); !errors.Is(err, context.Canceled) {
			t.Fatalf("do = %v, want context.Canceled", err)
		}
		if len(g.started) != 0 {
			t.Fatal("a call with a done context ran")
		}
	})
}

// TestBatcherPanic: a batch that panics fails its calls and leaves the
// batcher usable; the panic reaches the caller that ran it.
func TestBatcherPanic(t *testing.T) {
	t.Parallel()
	panics := true
	b := newBatcher(64, 16, func(_ context.Context, in []int) ([]int, error) {
		if panics {
			panic("boom")
		}
		return in, nil
	})
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not reach the caller")
			}
		}()
		_, _ = b.do(context.Background(), 1)
	}()
	panics = false
	if out, err := b.do(context.Background(), 2); err != nil || out != 2 {
		t.Fatalf("do after a panic = %d, %v", out, err)
	}
}

// TestBatchSizes: batches count at their size, sizes past the bound at
// the bound, sizes below zero at zero.
func TestBatchSizes(t *testing.T) {
	t.Parallel()
	h := newBatchSizes(4)
	var wg sync.WaitGroup
	for _, n := range []int{1, 1, 2, 4, 9, 0, -1} {
		wg.Go(func() { h.add(n) })
	}
	wg.Wait()
	if got, want := h.counts(), []uint64{2, 2, 1, 0, 2}; !slices.Equal(got, want) {
		t.Errorf("counts = %v, want %v", got, want)
	}
}
