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
