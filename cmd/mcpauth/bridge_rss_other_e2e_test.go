//go:build e2e && !linux

package main

// peakRSSKiB: measured on Linux only.
func peakRSSKiB(int) (int64, bool) { return 0, false }
