// Package cputime reads the CPU time of the calling thread, for benchmarks on a shared machine:
// a benchmark's wall time counts every moment another process held the core, its thread's CPU
// time only the work it did. Callers lock the goroutine to its thread (runtime.LockOSThread)
// around the span they measure.
package cputime

import (
	"runtime"
	"testing"
	"time"
)

// Thread returns the CPU time (user and system) the calling OS thread has used, and false
// where the platform cannot tell.
func Thread() (time.Duration, bool) { return thread() }

// Meter measures a benchmark's CPU time on its own thread: Start it just before the loop and
// Report after it. The goroutine stays locked to its thread in between.
type Meter struct {
	b     *testing.B
	start time.Duration
	ok    bool
}

// Start locks the benchmark's goroutine to its thread and reads the thread's clock.
func Start(b *testing.B) *Meter {
	runtime.LockOSThread()
	m := &Meter{b: b}
	m.start, m.ok = Thread()
	return m
}

// Report unlocks the thread and reports the CPU time per op divided by perOp (units of work
// in one op, 1 for a plain per-op figure) as the metric unit, e.g. "cpu-ns/partition";
// nothing where the platform has no thread clock.
func (m *Meter) Report(perOp float64, unit string) {
	end, ok := Thread()
	runtime.UnlockOSThread()
	if m.ok && ok && m.b.N > 0 {
		m.b.ReportMetric(float64(end-m.start)/float64(m.b.N)/perOp, unit)
	}
}
