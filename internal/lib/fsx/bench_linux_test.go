package fsx

import (
	"context"
	"io"
	"testing"

	"github.com/sluicedb/sluice/internal/lib/fsx/fsxtest"
)

const benchSize = 16 << 20

// BenchmarkCopyRange copies 16 MiB into an emptied file on the temp directory's file system
// (warm cache, no fsync) with each mechanism forced first.
func BenchmarkCopyRange(b *testing.B) {
	for _, m := range []Method{MethodCopyFileRange, MethodSendfile, MethodBuffered} {
		b.Run(m.String(), func(b *testing.B) {
			dir := b.TempDir()
			src := writeFile(b, dir, "src", randomBytes(50, benchSize))
			dst := writeFile(b, dir, "dst", nil)
			b.SetBytes(benchSize)
			b.ReportAllocs()
			for b.Loop() {
				// A fresh destination each time: writes allocate, as in a real split.
				if err := dst.Truncate(0); err != nil {
					b.Fatal(err)
				}
				if _, err := copyRange(dst, 0, src, 0, benchSize, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMoveXFS moves 16 MiB with unaligned, congruent edges into an emptied file on XFS:
// cloned middle versus a full copy (whose copy_file_range cannot remap, the offsets being
// unaligned).
func BenchmarkMoveXFS(b *testing.B) {
	dir := fsxtest.MountXFS(b, "300M")
	src := writeFile(b, dir, "src", randomBytes(51, benchSize+8192))
	for _, reflink := range []bool{true, false} {
		name := "copy"
		if reflink {
			name = "reflink"
		}
		b.Run(name, func(b *testing.B) {
			m := newMover(b, Config{})
			dst := writeFile(b, dir, "dst-"+name, nil)
			b.SetBytes(benchSize)
			b.ReportAllocs()
			for b.Loop() {
				if err := dst.Truncate(0); err != nil {
					b.Fatal(err)
				}
				if _, err := m.Move(dst, 100, src, 4196, benchSize, reflink); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSendfile sends 16 MiB over loopback TCP to a reader that discards it.
func BenchmarkSendfile(b *testing.B) {
	src := writeFile(b, b.TempDir(), "src", randomBytes(52, benchSize))
	client, server := loopback(b)
	go io.Copy(io.Discard, server)
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Sendfile(context.Background(), client, src, 0, benchSize); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSpliceToFile receives 16 MiB from loopback TCP into a file.
func BenchmarkSpliceToFile(b *testing.B) {
	dst := writeFile(b, b.TempDir(), "dst", nil)
	client, server := loopback(b)
	payload := randomBytes(53, benchSize)
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for b.Loop() {
		go client.Write(payload)
		if _, err := SpliceToFile(context.Background(), dst, 0, server, benchSize); err != nil {
			b.Fatal(err)
		}
	}
}
