package bti

import (
	"bytes"
	"io"
	"sync"
	"testing"

	"github.com/sluicedb/sluice/internal/lib/cputime"
)

var (
	benchKeysOnce sync.Once
	benchKeys     []testKey
	benchIndex    []byte
)

func benchSetup(b *testing.B) {
	benchKeysOnce.Do(func() {
		benchKeys = murmurKeys(1_000_000)
		benchIndex = buildIndex(b, benchKeys)
	})
}

// BenchmarkPartitionIndexBuild builds a Partitions.db for 1M Murmur3 keys per op; allocs/key
// is the steady-state allocation rate the builder must keep near zero.
func BenchmarkPartitionIndexBuild(b *testing.B) {
	benchSetup(b)
	b.ReportAllocs()
	for b.Loop() {
		w := NewPartitionIndexBuilder(io.Discard)
		for _, k := range benchKeys {
			if err := w.Add(k.comparable, 0x5A, k.pos); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := w.Finish(benchKeys[0].key, benchKeys[len(benchKeys)-1].key); err != nil {
			b.Fatal(err)
		}
	}
	per := float64(b.Elapsed().Nanoseconds()) / float64(b.N*len(benchKeys))
	b.ReportMetric(per, "ns/key")
}

// BenchmarkPartitionIndexAddAllocs measures allocations per Add alone.
func BenchmarkPartitionIndexAddAllocs(b *testing.B) {
	benchSetup(b)
	w := NewPartitionIndexBuilder(io.Discard)
	for _, k := range benchKeys[:100_000] { // warm the node pool
		w.Add(k.comparable, 0, k.pos)
	}
	b.ReportAllocs()
	i := 100_000
	for b.Loop() {
		if i == len(benchKeys) {
			b.StopTimer()
			w.Finish(nil, nil)
			w = NewPartitionIndexBuilder(io.Discard)
			i = 0
			b.StartTimer()
		}
		k := &benchKeys[i]
		if err := w.Add(k.comparable, 0, k.pos); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkPartitionIndexWalk walks an index of 1M keys held in memory.
func BenchmarkPartitionIndexWalk(b *testing.B) {
	benchSetup(b)
	p, err := OpenPartitionIndex(benchIndex)
	if err != nil {
		b.Fatal(err)
	}
	benchWalk(b, p)
}

// BenchmarkPartitionIndexWalkPaged walks the same index through the block cache, as scans do:
// the cost of copying each node out of its block.
func BenchmarkPartitionIndexWalkPaged(b *testing.B) {
	benchSetup(b)
	p, err := OpenPartitionIndexAt(bytes.NewReader(benchIndex), int64(len(benchIndex)))
	if err != nil {
		b.Fatal(err)
	}
	benchWalk(b, p)
}

func benchWalk(b *testing.B, p *PartitionIndex) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchIndex)))
	m := cputime.Start(b)
	for b.Loop() {
		n := 0
		p.Walk(func(e PartitionEntry) error { n++; return nil })
		if n != len(benchKeys) {
			b.Fatalf("walked %d", n)
		}
	}
	m.Report(float64(len(benchKeys)), "cpu-ns/key")
}

func BenchmarkPartitionIndexLookup(b *testing.B) {
	benchSetup(b)
	p, err := OpenPartitionIndex(benchIndex)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k := benchKeys[i%len(benchKeys)]
		if _, ok, _ := p.Lookup(k.comparable); !ok {
			b.Fatal("miss")
		}
		i += 7919
	}
}
