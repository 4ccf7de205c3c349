package main

import (
	"bytes"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// peakHeapProfiler keeps the heap profile of the moment the live heap was largest. An
// allocation profile written at exit shows what is live then, after the work is done; what
// raised the peak RSS is what was live at the peak. Both the profile's in-use figures and the
// live-heap metric describe the heap as the last completed collection left it, so a profile
// taken when the metric reaches a new high is the peak's.
type peakHeapProfiler struct {
	done chan struct{}
	out  chan []byte
}

// peakHeapPoll is how often the live heap is read: a collection every few milliseconds is
// rare, and reading a metric costs microseconds.
const peakHeapPoll = 5 * time.Millisecond

// peakHeapSampling is the heap profile's sampling interval while a peak is watched: the
// default 512 KiB leaves a few-MiB heap as a handful of samples, each standing for half a MiB.
const peakHeapSampling = 32 << 10

func startPeakHeapProfile() *peakHeapProfiler {
	runtime.MemProfileRate = peakHeapSampling
	p := &peakHeapProfiler{done: make(chan struct{}), out: make(chan []byte, 1)}
	go p.run()
	return p
}

func (p *peakHeapProfiler) run() {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var best []byte
	var high uint64
	t := time.NewTicker(peakHeapPoll)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			p.out <- best
			return
		case <-t.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			continue
		}
		if live := sample[0].Value.Uint64(); live > high {
			var buf bytes.Buffer
			if pprof.Lookup("heap").WriteTo(&buf, 0) == nil {
				high, best = live, buf.Bytes()
			}
		}
	}
}

// stop ends the polling and writes the kept profile to path (the heap as it is now, if the
// live heap was never read).
func (p *peakHeapProfiler) stop(path string) error {
	close(p.done)
	best := <-p.out
	if best == nil {
		var buf bytes.Buffer
		if err := pprof.Lookup("heap").WriteTo(&buf, 0); err != nil {
			return err
		}
		best = buf.Bytes()
	}
	return os.WriteFile(path, best, 0o644)
}
