package bench

import (
	"runtime"
	"syscall"
	"time"
)

// Sample is one measured run.
type Sample struct {
	Wall      time.Duration
	CPU       time.Duration // user + system of the whole process
	HeapBytes uint64        // bytes allocated on the Go heap
	Mallocs   uint64
}

// Measure runs fn and records wall clock, process CPU time and heap allocation.
func Measure(fn func() error) (Sample, error) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cpu0 := cpuTime()
	start := time.Now()
	err := fn()
	s := Sample{Wall: time.Since(start), CPU: cpuTime() - cpu0}
	runtime.ReadMemStats(&after)
	s.HeapBytes = after.TotalAlloc - before.TotalAlloc
	s.Mallocs = after.Mallocs - before.Mallocs
	return s, err
}

// Time runs fn and records its wall clock and the process's CPU time only (HeapBytes and
// Mallocs stay zero): no forced collection and no heap statistics, each of which stops the
// world, for a short command such as `sstable split` whose run is also timed from outside.
func Time(fn func() error) (Sample, error) {
	cpu0 := cpuTime()
	start := time.Now()
	err := fn()
	return Sample{Wall: time.Since(start), CPU: cpuTime() - cpu0}, err
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// MBps is bytes per second in MB/s (10^6).
func MBps(bytes int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) / d.Seconds() / 1e6
}
