// Package clock is the one clock type of the module: a function returning
// the current time, where nil means the system clock. Configurations keep
// their public field as func() time.Time; code reads it through [Func].
package clock

import "time"

// Func returns the current time. Its zero value is the system clock, so a
// configuration that leaves its clock unset gets time.Now.
type Func func() time.Time

// Now returns f(), or time.Now() when f is nil.
func (f Func) Now() time.Time {
	if f == nil {
		return time.Now()
	}
	return f()
}
