package stream

import (
	"context"
	"os"
	"testing"

	"github.com/sluicedb/sluice/sstable/token"
)

// BenchmarkFetch fetches over loopback QUIC (TLS 1.3) from one 4 MiB-ish LZ4 sstable: a
// partial half of the ring and the whole (entire). Bytes are those received.
func BenchmarkFetch(b *testing.B) {
	ca := newTestCA(b)
	root := b.TempDir()
	genTable(b, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{1}, partitions: 1000})
	_, addr := testServer(b, Config{}, dirCatalog{root}, ca.server(b))
	client := ca.client(b, ca)
	for _, tc := range []struct{ name, ranges string }{
		{"partial", "(-9000000000000000000,0]"},
		{"entire", "(0,0]"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ranges, _ := token.ParseRanges(token.Murmur3, tc.ranges)
			b.ReportAllocs()
			var bytes int64
			for i := 0; i < b.N; i++ {
				dir, err := os.MkdirTemp(b.TempDir(), "f")
				if err != nil {
					b.Fatal(err)
				}
				res, err := Fetch(context.Background(), Config{}, client, FetchRequest{Peer: addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: dir}, nil)
				if err != nil {
					b.Fatal(err)
				}
				bytes = res.BytesReceived
			}
			b.SetBytes(bytes)
		})
	}
}

// BenchmarkTLSPlane fetches the partial half of BenchmarkFetch's sstable over the TCP data
// planes: TLS 1.3 on TCP (payloads through user space) and plain TCP (sendfile on the sender,
// splice into the file on the receiver), the paths the I/O seam must keep zero-copy.
func BenchmarkTLSPlane(b *testing.B) {
	ca := newTestCA(b)
	root := b.TempDir()
	genTable(b, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{1}, partitions: 1000})
	ranges, _ := token.ParseRanges(token.Murmur3, "(-9000000000000000000,0]")
	for _, tr := range []string{TransportTLS, TransportTCP} {
		b.Run(tr, func(b *testing.B) {
			_, addr := testServer(b, Config{Transport: tr}, dirCatalog{root}, ca.server(b))
			client := ca.client(b, ca)
			b.ReportAllocs()
			var bytes int64
			for i := 0; i < b.N; i++ {
				res, err := Fetch(context.Background(), Config{Transport: tr}, client,
					FetchRequest{Peer: addr, Keyspace: "ks", Table: "t", Ranges: ranges, Dir: b.TempDir()}, nil)
				if err != nil {
					b.Fatal(err)
				}
				bytes = res.BytesReceived
			}
			b.SetBytes(bytes)
		})
	}
}
