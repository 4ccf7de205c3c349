// Package bench holds the measurements behind `sluice bench`: each one generates (or reuses)
// its workload, measures sluice against the bare library doing the same work on the same
// bytes, and returns rows for a comparison table. Go testing.B benchmarks live beside the
// packages they measure; these are the end-to-end numbers docs/BENCHMARKS.md quotes.
package bench
