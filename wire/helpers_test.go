package wire

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
)

// Test-side encoding helpers, written independently of the package's writer so that
// hostile and hand-built frames do not depend on the code under test.

func uv(v uint64) []byte { return binary.AppendUvarint(nil, v) }

// fld is one raw field: tag, value.
type fld struct {
	tag uint64
	val []byte
}

func field(tag uint64, val []byte) []byte {
	return append(append(uv(tag), uv(uint64(len(val)))...), val...)
}

func body(fs ...fld) []byte {
	var b []byte
	for _, f := range fs {
		b = append(b, field(f.tag, f.val)...)
	}
	return b
}

func frame(t MsgType, body []byte) []byte {
	return append(append(uv(uint64(t)), uv(uint64(len(body)))...), body...)
}

// split decodes a field sequence the way the format defines it; it panics on input the
// tests did not build themselves.
func split(b []byte) []fld {
	var fs []fld
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		l, m := binary.Uvarint(b[n:])
		if n <= 0 || m <= 0 || l > uint64(len(b)-n-m) {
			panic("split: malformed body")
		}
		fs = append(fs, fld{tag, b[n+m : n+m+int(l)]})
		b = b[n+m+int(l):]
	}
	return fs
}

// splitFrame returns a frame's type and body fields.
func splitFrame(b []byte) (MsgType, []fld) {
	t, n := binary.Uvarint(b)
	l, m := binary.Uvarint(b[n:])
	if n <= 0 || m <= 0 || uint64(len(b)-n-m) != l {
		panic("splitFrame: not one whole frame")
	}
	return MsgType(t), split(b[n+m:])
}

// rewrite rebuilds frame b with its fields passed through edit.
func rewrite(b []byte, edit func([]fld) []fld) []byte {
	t, fs := splitFrame(b)
	return frame(t, body(edit(fs)...))
}

func be64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

var (
	sid        = SessionID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10}
	maxString  = strings.Repeat("s", 65535) // the default MaxStringLen
	maxToken   = bytes.Repeat([]byte{0xff}, 65535)
	payload64k = bytes.Repeat([]byte("0123456789abcdef"), 4096)
)

type sample struct {
	name string
	m    Message
}

// samples holds representative values of every message: zero values, typical values and
// the largest values each field admits under the default Limits.
func samples() []sample {
	token := [32]byte{}
	for i := range token {
		token[i] = byte(i * 7)
	}
	return []sample{
		{"Hello/zero", &Hello{}},
		{"Hello/typical", &Hello{MinVersion: 1, MaxVersion: 3, Node: "node-a", Features: []string{"tcp-data-plane", "", "zstd"}}},
		{"Hello/max", &Hello{MinVersion: math.MaxUint32, MaxVersion: math.MaxUint32, Node: maxString, Features: []string{maxString, maxString}}},
		{"HelloAck/zero", &HelloAck{}},
		{"HelloAck/typical", &HelloAck{Version: 1, Node: "node-b"}},
		{"StreamRequest/zero", &StreamRequest{}},
		{"StreamRequest/typical", &StreamRequest{
			SessionID: sid, Operation: OpRepair, Keyspace: "ks", Table: "events",
			Ranges: []TokenRange{
				{Left: be64(math.MinInt64), Right: be64(-1)},
				{Left: nil, Right: []byte("key")},
				{},
			},
			Resume: []ResumePoint{{SSTableID: "nb-12-big", VerifiedChunks: 1000}, {}},
			Source: "9f3a1c2b4d5e",
		}},
		{"StreamRequest/max", &StreamRequest{
			SessionID: SessionID{0: 0xff, 15: 0xff}, Operation: Op(math.MaxUint8), Keyspace: maxString, Table: maxString,
			Ranges: []TokenRange{{Left: maxToken, Right: maxToken}},
			Resume: []ResumePoint{{SSTableID: maxString, VerifiedChunks: math.MaxUint64}},
			Source: maxString,
		}},
		{"Prepare/zero", &Prepare{}},
		{"Prepare/typical", &Prepare{SessionID: sid, SSTables: []PlannedSSTable{
			{ID: "nb-1-big", Kind: KindEntire, Reason: "wholly inside the ranges", Bytes: 1 << 30, Partitions: 123456},
			{ID: "da-2-bti", Kind: KindPartial, Reason: "3 of 256 ranges", Bytes: 4096, Partitions: 7},
			{},
		}}},
		{"Prepare/max", &Prepare{SSTables: []PlannedSSTable{{ID: maxString, Kind: Kind(math.MaxUint8), Reason: maxString, Bytes: math.MaxUint64, Partitions: math.MaxUint64}}}},
		{"Manifest/zero", &Manifest{}},
		{"Manifest/typical", &Manifest{
			SSTableID: "nb-1-big", Version: "nb", Format: "big", Kind: KindPartial,
			DataLength: 10 << 20, DataFileLength: 3 << 20, ChunkLength: 16 << 10,
			Compression:      bytes.Repeat([]byte{0, 1, 2, 3}, 100),
			Runs:             []Run{{FirstChunk: 0, ChunkCount: 10, FileOffset: 0, Length: 81920}, {FirstChunk: 40, ChunkCount: 2, FileOffset: 81920, Length: 9000}},
			Components:       []ComponentSpec{{Name: "Filter.db", Length: 176}, {Name: "TOC.txt", Length: 0}},
			IndexSliceLength: 5000, Partitions: 1000, Statistics: []byte("stats"), Digest: 0xdeadbeef, IndexFormat: IndexBig,
			Spans: []Span{{Lo: 12, Hi: 90000}, {Lo: 655360, Hi: 670000}},
		}},
		{"Manifest/max", &Manifest{
			SSTableID: maxString, Version: maxString, Format: maxString, Kind: Kind(math.MaxUint8),
			DataLength: math.MaxUint64, DataFileLength: math.MaxUint64, ChunkLength: math.MaxUint32,
			Compression:      payload64k,
			Runs:             []Run{{math.MaxUint64, math.MaxUint64, math.MaxUint64, math.MaxUint64, math.MaxUint64}},
			Components:       []ComponentSpec{{Name: maxString, Length: math.MaxUint64}},
			IndexSliceLength: math.MaxUint64, Partitions: math.MaxUint64, Statistics: payload64k, Digest: math.MaxUint32,
			DeadBytes: math.MaxUint64, IndexFormat: IndexFormat(math.MaxUint8),
			Spans: []Span{{Lo: math.MaxUint64, Hi: math.MaxUint64}},
		}},
		{"Data/zero", &Data{}},
		{"Data/typical", &Data{SSTableID: "nb-1-big", Stream: StreamIndex, Offset: 4096, Payload: []byte("index bytes")}},
		{"Data/64KiB", &Data{SSTableID: "nb-1-big", Stream: StreamRuns, Offset: 1 << 40, Payload: payload64k}},
		{"Data/max", &Data{SSTableID: maxString, Stream: DataStream(math.MaxUint8), Component: math.MaxUint32, Offset: math.MaxUint64, Payload: payload64k}},
		{"Received/zero", &Received{}},
		{"Received/max", &Received{SSTableID: maxString, VerifiedChunks: math.MaxUint64, Bytes: math.MaxUint64}},
		{"Installed/zero", &Installed{}},
		{"Installed/typical", &Installed{SSTableID: "nb-1-big", Partitions: 1000}},
		{"Complete/zero", &Complete{}},
		{"Complete/max", &Complete{SessionID: sid, SSTables: math.MaxUint64, Bytes: math.MaxUint64, Partitions: math.MaxUint64}},
		{"Failure/zero", &Failure{}},
		{"Failure/typical", &Failure{Code: CodeChecksum, SSTableID: "nb-1-big", Reason: "chunk 17: crc mismatch"}},
		{"Failure/max", &Failure{Code: Code(math.MaxUint32), SSTableID: maxString, Reason: maxString}},
		{"Keepalive/zero", &Keepalive{}},
		{"Keepalive/max", &Keepalive{Nanos: math.MaxUint64}},
		{"TCPDataPlane/zero", &TCPDataPlane{}},
		{"TCPDataPlane/typical", &TCPDataPlane{Token: token, Addr: "10.0.0.7:7011"}},
	}
}
