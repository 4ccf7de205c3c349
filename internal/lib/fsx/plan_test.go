package fsx

import "testing"

func TestPlanMove(t *testing.T) {
	const K = 4096
	big := int64(1 << 40) // a source and destination size that no range reaches
	tests := []struct {
		name                    string
		srcOff, dstOff, n       int64
		srcSize, dstSize, align int64
		want                    movePlan
	}{
		{"aligned whole blocks", 0, 0, 4 * K, big, 0, K, movePlan{clone: 4 * K}},
		{"aligned, unaligned length", 0, 8 * K, 4*K + 100, big, 0, K, movePlan{clone: 4 * K, tail: 100}},
		{"congruent unaligned", 100, 8*K + 100, 4 * K, big, 0, K, movePlan{head: K - 100, clone: 3 * K, tail: 100}},
		{"congruent, head ends exactly at n", 100, 100, K - 100, big, 0, K, movePlan{head: K - 100}},
		{"shorter than one block", 100, 100, 50, big, 0, K, movePlan{head: 50}},
		{"not congruent", 100, 200, 10 * K, big, 0, K, movePlan{head: 10 * K}},
		{"less than a block after the head", 100, 100, K, big, 0, K, movePlan{head: K}},
		{"ends at source EOF: partial block cloned", 0, 0, 3*K + 7, 3*K + 7, 0, K, movePlan{clone: 3*K + 7}},
		{"ends at source EOF, head copied", K + 5, 5, 2*K + 9, 3*K + 14, 0, K, movePlan{head: K - 5, clone: K + 14}},
		{"ends at source EOF, only a partial block left", 5, 5, K - 5 + 9, K + 9, 0, K, movePlan{head: K - 5, clone: 9}},
		{"source EOF but destination continues", 0, 0, 3*K + 7, 3*K + 7, 10 * K, K, movePlan{clone: 3 * K, tail: 7}},
		{"source EOF, destination ends exactly there", 0, 0, 3*K + 7, 3*K + 7, 3*K + 7, K, movePlan{clone: 3*K + 7}},
		{"not at source EOF", 0, 0, 3*K + 7, 3*K + 8, 0, K, movePlan{clone: 3 * K, tail: 7}},
		{"64 KiB alignment", 70000, 70000 + 65536, 300000, big, 0, 65536,
			movePlan{head: 131072 - 70000, clone: 3 * 65536, tail: 300000 - (131072 - 70000) - 3*65536}},
		{"no alignment", 0, 0, K, big, 0, 0, movePlan{head: K}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planMove(tt.srcOff, tt.dstOff, tt.n, tt.srcSize, tt.dstSize, tt.align)
			if got != tt.want {
				t.Fatalf("planMove = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// FuzzPlanMove checks the plan's invariants: it covers the request exactly, and a clone starts
// aligned on both sides and is aligned in length unless it ends at the source's EOF with the
// destination ending there or earlier.
func FuzzPlanMove(f *testing.F) {
	f.Add(int64(100), int64(4196), int64(10000), int64(20000), int64(0), uint8(12))
	f.Add(int64(0), int64(0), int64(12295), int64(12295), int64(0), uint8(12))
	f.Add(int64(70000), int64(135536), int64(300000), int64(1<<30), int64(1<<30), uint8(16))
	f.Fuzz(func(t *testing.T, srcOff, dstOff, n, srcSize, dstSize int64, shift uint8) {
		if srcOff < 0 || dstOff < 0 || n < 0 || srcOff > 1<<50 || dstOff > 1<<50 || n > 1<<50 {
			return
		}
		align := int64(1) << (shift % 24)
		p := planMove(srcOff, dstOff, n, srcSize, dstSize, align)
		if p.head < 0 || p.clone < 0 || p.tail < 0 || p.head+p.clone+p.tail != n {
			t.Fatalf("plan %+v does not cover %d bytes", p, n)
		}
		if p.clone == 0 {
			if p.head != n {
				t.Fatalf("copy-only plan %+v must be all head", p)
			}
			return
		}
		s, d := srcOff+p.head, dstOff+p.head
		if s%align != 0 || d%align != 0 {
			t.Fatalf("clone starts unaligned: src %d dst %d align %d", s, d, align)
		}
		atEOF := s+p.clone == srcSize && dstOff+n >= dstSize
		if p.clone%align != 0 && !atEOF {
			t.Fatalf("unaligned clone length %d not at source EOF (plan %+v)", p.clone, p)
		}
		if p.head >= align || (p.tail >= align) {
			t.Fatalf("edge of a block or more copied: %+v align %d", p, align)
		}
	})
}
