package pgstore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
)

// errBatchQueueFull is returned by [batcher.do] when the queue is full:
// the caller runs its request alone instead.
var errBatchQueueFull = errors.New("pgstore: batch queue is full")

// batcher groups concurrent calls into batches the way a commit batcher
// does: a call that finds no batch in flight runs one at once, with
// itself and whatever is queued; calls that arrive while a batch is in
// flight queue and go in the next batch. When a batch ends, the first
// queued call is woken to run the next one (leader and followers), so no
// goroutine of its own runs and nothing waits on a timer: an idle batcher
// adds no latency.
//
// A batch holds at most maxBatch calls and the queue at most maxQueue; a
// call that finds the queue full gets errBatchQueueFull. The zero value is
// not usable; use [newBatcher].
type batcher[In, Out any] struct {
	// run handles one batch: it returns one result per input, in order,
	// or an error for the whole batch. ctx is the running caller's,
	// without its cancellation: the other callers depend on the batch.
	run      func(ctx context.Context, in []In) ([]Out, error)
	maxBatch int
	maxQueue int

	mu    sync.Mutex
	busy  bool // a batch is in flight, or a queued call was woken to run one
	queue []*batchCall[In, Out]
}

// batchCall is one call's place in the queue. Its fields after in are
// written under the batcher's mutex before wake is signalled, once.
type batchCall[In, Out any] struct {
	in   In
	wake chan struct{} // buffered: signalled once, to lead or when done
	lead bool          // woken to run the next batch
	done bool          // out and err are set
	out  Out
	err  error
}

func newBatcher[In, Out any](maxBatch, maxQueue int, run func(ctx context.Context, in []In) ([]Out, error)) *batcher[In, Out] {
	return &batcher[In, Out]{run: run, maxBatch: max(maxBatch, 1), maxQueue: max(maxQueue, 0)}
}

// do runs in within a batch and returns its result. If ctx ends while in
// is queued, do returns ctx.Err() and in is not run; if it ends while the
// batch holding in is in flight, do returns ctx.Err() at once and in may
// or may not have taken effect, as with any cancelled statement. A caller
// that runs a batch returns when the batch ends.
func (b *batcher[In, Out]) do(ctx context.Context, in In) (Out, error) {
	var zero Out
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	c := &batchCall[In, Out]{in: in, wake: make(chan struct{}, 1)}
	b.mu.Lock()
	if !b.busy {
		b.busy = true
		b.mu.Unlock()
		return b.lead(ctx, c)
	}
	if len(b.queue) >= b.maxQueue {
		b.mu.Unlock()
		return zero, errBatchQueueFull
	}
	b.queue = append(b.queue, c)
	b.mu.Unlock()

	select {
	case <-c.wake:
		b.mu.Lock()
		lead, out, err := c.lead, c.out, c.err
		if lead && ctx.Err() != nil {
			b.handoff()
			b.mu.Unlock()
			return zero, ctx.Err()
		}
		b.mu.Unlock()
		if lead {
			return b.lead(ctx, c)
		}
		return out, err
	case <-ctx.Done():
		b.mu.Lock()
		defer b.mu.Unlock()
		switch {
		case c.done:
			return c.out, c.err
		case c.lead:
			b.handoff() // woken to lead, but gone: the next queued call leads
		default:
			if i := slices.Index(b.queue, c); i >= 0 {
				b.queue = slices.Delete(b.queue, i, i+1)
			} // else in a batch in flight, which will set its result unread
		}
		return zero, ctx.Err()
	}
}

// lead runs the batch of c and the queued calls, completes the others and
// wakes the next leader.
func (b *batcher[In, Out]) lead(ctx context.Context, c *batchCall[In, Out]) (Out, error) {
	b.mu.Lock()
	n := min(len(b.queue), b.maxBatch-1)
	batch := make([]*batchCall[In, Out], 0, n+1)
	batch = append(append(batch, c), b.queue[:n]...)
	b.queue = slices.Delete(b.queue, 0, n)
	b.mu.Unlock()

	in := make([]In, len(batch))
	for i, bc := range batch {
		in[i] = bc.in
	}
	finished := false
	defer func() {
		if !finished { // run panicked: fail the batch, keep the batcher usable
			b.finish(batch, nil, errors.New("pgstore: batch failed"))
		}
	}()
	out, err := b.run(context.WithoutCancel(ctx), in)
	if err == nil && len(out) != len(in) {
		err = errors.New("pgstore: batch returned a wrong number of results")
	}
	finished = true
	b.finish(batch, out, err)
	return c.out, c.err
}

// finish completes the calls of a batch and wakes the next leader.
func (b *batcher[In, Out]) finish(batch []*batchCall[In, Out], out []Out, err error) {
	b.mu.Lock()
	for i, bc := range batch {
		bc.done, bc.err = true, err
		if err == nil {
			bc.out = out[i]
		}
		if i > 0 {
			bc.wake <- struct{}{}
		}
	}
	b.handoff()
	b.mu.Unlock()
}

// handoff wakes the first queued call to run the next batch, or marks the
// batcher idle. b.mu is held.
func (b *batcher[In, Out]) handoff() {
	if len(b.queue) == 0 {
		b.busy = false
		return
	}
	next := b.queue[0]
	b.queue = slices.Delete(b.queue, 0, 1)
	next.lead = true
	next.wake <- struct{}{}
}

// batchSizes counts batches by their size, from 1 to a bound fixed at
// creation (larger ones count at the bound). It is safe for concurrent
// use; [newBatchSizes] makes one.
type batchSizes []atomic.Uint64

func newBatchSizes(maxBatch int) batchSizes { return make(batchSizes, max(maxBatch, 1)+1) }

// add counts a batch of n.
func (h batchSizes) add(n int) { h[min(max(n, 0), len(h)-1)].Add(1) }

// counts returns the counts: element n is the number of batches of n
// (element 0 those of none).
func (h batchSizes) counts() []uint64 {
	out := make([]uint64, len(h))
	for i := range h {
		out[i] = h[i].Load()
	}
	return out
}
