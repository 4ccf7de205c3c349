package cputime

import (
	"runtime"
	"testing"
	"time"
)

// Busy work counts and sleeping does not: the clock is the thread's, not the wall's.
func TestThreadCountsWorkNotSleep(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, ok := Thread()
	if !ok {
		t.Skip("no thread CPU clock on " + runtime.GOOS)
	}
	time.Sleep(200 * time.Millisecond)
	slept, _ := Thread()
	if d := slept - start; d > 100*time.Millisecond {
		t.Fatalf("a 200 ms sleep used %v of CPU", d)
	}
	x := uint64(1)
	for wall := time.Now(); time.Since(wall) < 50*time.Millisecond; {
		for range 1000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	busy, _ := Thread()
	if d := busy - slept; d <= 0 || x == 0 {
		t.Fatalf("50 ms of busy work used %v of CPU", d)
	}
}

// The meter reports its metric per op and unit of work.
func BenchmarkMeterReportsPerUnit(b *testing.B) {
	m := Start(b)
	x := uint64(1)
	for b.Loop() {
		for range 1000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	m.Report(1000, "cpu-ns/step")
	if x == 0 {
		b.Fatal("unreachable")
	}
}
