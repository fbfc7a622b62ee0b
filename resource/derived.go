package resource

import (
	"context"
	"sync/atomic"
)

// Derived is a value computed from a verified token once per verification
// and kept with it: every later request presenting the same token, served
// from the verified-token cache, gets the value computed for the first one
// instead of computing it again. A reverse proxy uses it for the identity
// headers it forwards, a handler for a parsed custom claim.
//
// The computation must depend only on the [TokenInfo] it is given (a copy
// of its own), and its result is shared by every request with the same
// token, concurrent ones included: treat it as read-only. The value lives as long as the
// verification stays cached (at most [CacheConfig].MaxAge), outside the
// cache's MaxBytes estimate, so keep it small. Two requests with the same
// token may both compute it when they race on the first use; one result
// is kept. A verification keeps the values of at most [MaxDerivedPerToken]
// Deriveds: make each Derived once (as a package or server variable), not
// per request; a Derived beyond that bound computes its value on every
// call. A Derived is safe for concurrent use.
type Derived[T any] struct {
	compute func(*TokenInfo) T
}

// NewDerived returns a Derived that computes its value with compute.
func NewDerived[T any](compute func(*TokenInfo) T) *Derived[T] {
	return &Derived[T]{compute: compute}
}

// MaxDerivedPerToken bounds the number of [Derived] values a verification
// keeps, so that a program that makes a Derived per request cannot grow a
// cached verification without bound.
const MaxDerivedPerToken = 16

// derivedValue is one Derived's value in a verification's list.
type derivedValue struct {
	owner any // the *Derived[T]
	value any
	next  *derivedValue
}

// Value returns the value for the verified token of the request whose
// context is ctx (the context the middleware gives the wrapped handler),
// computing it on first use for that verification. ok is false, and
// nothing is computed, when ctx carries no verified token. For a context
// made by [ContextWithTokenInfo] the value is computed on every call: it
// has no verification to keep it with.
func (d *Derived[T]) Value(ctx context.Context) (value T, ok bool) {
	switch x := ctx.Value(ctxKey{}).(type) {
	case *requestAuth:
		return d.kept(x.av), true
	case *TokenInfo:
		return d.compute(x.clone()), true
	}
	return value, false
}

// kept returns d's value kept with av, computing and adding it first if
// needed. The computation gets its own copy of the identity, so that
// nothing it does can change the cached verification.
func (d *Derived[T]) kept(av *authValue) T {
	head := av.derived.Load()
	if v, ok := d.find(head); ok {
		return v
	}
	value := d.compute(av.info.clone())
	e := &derivedValue{owner: d, value: value}
	for {
		if head.len() >= MaxDerivedPerToken {
			return value // the list is full: not kept
		}
		e.next = head
		if av.derived.CompareAndSwap(head, e) {
			return value
		}
		head = av.derived.Load()
		if v, ok := d.find(head); ok { // computed concurrently: keep the first
			return v
		}
	}
}

// find returns d's value in the list that starts at head.
func (d *Derived[T]) find(head *derivedValue) (value T, ok bool) {
	for e := head; e != nil; e = e.next {
		if e.owner == d {
			return e.value.(T), true
		}
	}
	return value, false
}

// len is the length of the list that starts at e.
func (e *derivedValue) len() int {
	n := 0
	for ; e != nil; e = e.next {
		n++
	}
	return n
}

// derivedList is the per-verification storage of Derived values.
type derivedList = atomic.Pointer[derivedValue]
