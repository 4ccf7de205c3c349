package stream

import (
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/compress"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/slice"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
	"github.com/sluicedb/sluice/wire"
)

// outgoingPartial generates one sstable and plans its one-per-parent partial child of a fixed
// range with the real sender's planner: the parent (closed at cleanup), its Statistics.db and
// the partial.
func outgoingPartial(t testing.TB, compression string, seed uint64, partitions int64) (string, *sstable.Table, []byte, *slice.Partial) {
	t.Helper()
	root := t.TempDir()
	p := genTable(t, root, "m", genSpec{version: "oa", compression: compression, seeds: []uint64{seed}, partitions: partitions})[0]
	tb, err := sstable.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close() })
	st, err := os.ReadFile(tb.Path(descriptor.Statistics))
	if err != nil {
		t.Fatal(err)
	}
	ranges, _ := token.ParseRanges(token.Murmur3, "(-3000000000000000000,4000000000000000000]")
	ps, _, err := slice.Partials(tb, ranges, slice.PartialOptions{OnePerParent: true})
	if err != nil || len(ps) != 1 {
		t.Fatalf("partials: %v, %d", err, len(ps))
	}
	return p, tb, st, &ps[0]
}

// manifests builds, from a generated sstable, the partial and entire Manifests a sender
// would send.
func manifests(t testing.TB, compression string) (partial, entire *wire.Manifest) {
	t.Helper()
	p, tb, st, pa := outgoingPartial(t, compression, 3, 40)
	id := filepath.Base(p)
	o := &outgoing{planned: wire.PlannedSSTable{ID: id + "@1", Kind: wire.KindPartial, Partitions: uint64(pa.Plan.Partitions)}, parent: tb, stats: st, partial: pa}
	partial, srcs, err := manifestFor(o, fileStorage{})
	if err != nil {
		t.Fatal(err)
	}
	o = &outgoing{planned: wire.PlannedSSTable{ID: id, Kind: wire.KindEntire}, parent: tb, stats: st}
	entire, srcs2, err := manifestFor(o, fileStorage{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(srcs, srcs2...) {
		if s.r != nil {
			s.r.Close()
		}
	}
	return partial, entire
}

// session scripts a Receiver to the point where it waits for Manifests of ms.
func session(t testing.TB, ms ...*wire.Manifest) *Receiver {
	t.Helper()
	r := NewReceiver(Config{}, wire.StreamRequest{SessionID: wire.SessionID{1}, Operation: wire.OpFetch, Keyspace: "ks", Table: "t"})
	if out := r.Start(); len(out) != 1 || out[0].Type() != wire.MsgHello {
		t.Fatalf("start: %v", out)
	}
	st, err := r.Step(&wire.HelloAck{Version: wire.Version1, Node: "peer"})
	if err != nil || len(st.Send) != 1 || st.Send[0].Type() != wire.MsgStreamRequest {
		t.Fatalf("HelloAck: %v %v", st, err)
	}
	p := &wire.Prepare{SessionID: wire.SessionID{1}}
	for _, m := range ms {
		p.SSTables = append(p.SSTables, wire.PlannedSSTable{ID: m.SSTableID, Kind: m.Kind})
	}
	if _, err := r.Step(p); err != nil {
		t.Fatal(err)
	}
	return r
}

func types(ms []wire.Message) []wire.MsgType {
	var out []wire.MsgType
	for _, m := range ms {
		out = append(out, m.Type())
	}
	return out
}

func clone(m *wire.Manifest) *wire.Manifest {
	b := m.Append(nil)
	c, _, err := wire.ParseMessage(b, wire.Limits{})
	if err != nil {
		panic(err)
	}
	return c.(*wire.Manifest)
}

func TestReceiverScript(t *testing.T) {
	partial, entire := manifests(t, "lz4")
	type step struct {
		in      wire.Message
		send    []wire.MsgType
		receive bool
		discard string
		done    bool
		err     bool
	}
	for _, tc := range []struct {
		name  string
		plan  []*wire.Manifest
		steps []step
	}{
		{"empty plan completes at once", nil, nil},
		{"manifest then install", []*wire.Manifest{partial}, []step{
			{in: partial, receive: true},
		}},
		{"sender refuses an sstable", []*wire.Manifest{partial, entire}, []step{
			{in: &wire.Failure{Code: wire.CodeRefused, SSTableID: partial.SSTableID}},
			{in: &wire.Keepalive{Nanos: 1}},
			{in: &wire.Failure{Code: wire.CodeRefused, SSTableID: entire.SSTableID}, send: []wire.MsgType{wire.MsgComplete}, done: true},
		}},
		{"unplanned manifest", []*wire.Manifest{partial}, []step{
			{in: entire, send: []wire.MsgType{wire.MsgFailure}, err: true},
		}},
		{"second manifest while streaming", []*wire.Manifest{partial, entire}, []step{
			{in: partial, receive: true},
			{in: entire, send: []wire.MsgType{wire.MsgFailure}, err: true},
		}},
		{"session failure from the sender", []*wire.Manifest{partial}, []step{
			{in: &wire.Failure{Code: wire.CodeInternal, Reason: "boom"}, err: true},
		}},
		{"unexpected message", []*wire.Manifest{partial}, []step{
			{in: &wire.Hello{MinVersion: 1, MaxVersion: 1}, send: []wire.MsgType{wire.MsgFailure}, err: true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := session(t, tc.plan...)
			if len(tc.plan) == 0 {
				if !r.Done() {
					t.Fatal("empty plan not done")
				}
				return
			}
			for i, s := range tc.steps {
				st, err := r.Step(s.in)
				if (err != nil) != s.err {
					t.Fatalf("step %d (%v): err = %v", i, s.in.Type(), err)
				}
				if got := types(st.Send); !reflect.DeepEqual(got, s.send) {
					t.Errorf("step %d: sent %v, want %v", i, got, s.send)
				}
				if (st.Receive != nil) != s.receive || st.Discard != s.discard || st.Done != s.done {
					t.Errorf("step %d: step %+v", i, st)
				}
			}
		})
	}
}

// A whole partial sstable through the pure receiver: Data frames accepted in order, chunks
// verified, then Installed acknowledges with Received, Installed and Complete.
func TestReceiverAcceptsDataInOrder(t *testing.T) {
	partial, _ := manifests(t, "lz4")
	r := session(t, partial)
	st, err := r.Step(partial)
	if err != nil || st.Receive == nil {
		t.Fatal(st, err)
	}
	in := st.Receive
	data := make([]byte, partial.DataFileLength)
	// Chunks with correct CRCs: build them from the manifest's CompressionInfo.
	info := in.Info
	for k := range info.Offsets {
		end := int64(partial.DataFileLength)
		if k+1 < len(info.Offsets) {
			end = info.Offsets[k+1]
		}
		body := data[info.Offsets[k] : end-4]
		for i := range body {
			body[i] = byte(k + i)
		}
		c := crc32.ChecksumIEEE(body)
		data[end-4], data[end-3], data[end-2], data[end-1] = byte(c>>24), byte(c>>16), byte(c>>8), byte(c)
	}
	if err := in.Accept(&wire.Data{SSTableID: partial.SSTableID, Stream: wire.StreamRuns, Offset: 1, Payload: data[:1]}); !errors.Is(err, ErrProtocol) {
		t.Errorf("out-of-order offset: %v", err)
	}
	for off := 0; off < len(data); off += 1000 {
		end := min(off+1000, len(data))
		if err := in.Accept(&wire.Data{SSTableID: partial.SSTableID, Stream: wire.StreamRuns, Offset: uint64(off), Payload: data[off:end]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := in.Accept(&wire.Data{SSTableID: partial.SSTableID, Stream: wire.StreamRuns, Offset: uint64(len(data)), Payload: []byte{0}}); !errors.Is(err, ErrProtocol) {
		t.Errorf("overrun: %v", err)
	}
	if err := in.Complete(); err == nil {
		t.Error("complete without the index slice")
	}
	idx := make([]byte, partial.IndexSliceLength)
	if err := in.Accept(&wire.Data{SSTableID: partial.SSTableID, Stream: wire.StreamIndex, Payload: idx}); err != nil {
		t.Fatal(err)
	}
	if err := in.Complete(); err != nil {
		t.Fatal(err)
	}
	if in.VerifiedChunks() != uint64(len(info.Offsets)) {
		t.Errorf("verified %d chunks of %d", in.VerifiedChunks(), len(info.Offsets))
	}
	st = r.Installed(partial.SSTableID, partial.Partitions)
	if got := types(st.Send); !reflect.DeepEqual(got, []wire.MsgType{wire.MsgReceived, wire.MsgInstalled, wire.MsgComplete}) || !st.Done {
		t.Errorf("installed: %v", got)
	}
}

// Hostile or inconsistent manifests fail their sstable (a Failure naming it, and its data
// stream discarded), never the receiver.
func TestReceiverRejectsHostileManifests(t *testing.T) {
	partial, entire := manifests(t, "lz4")
	plain, _ := manifests(t, "none")
	info, err := compress.ParseInfo(partial.Compression, mustVersion(t, partial))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		base   *wire.Manifest
		mutate func(m *wire.Manifest)
	}{
		{"run outside the file", partial, func(m *wire.Manifest) { m.Runs[0].FileOffset = 10 }},
		{"run longer than the file", partial, func(m *wire.Manifest) { m.Runs[0].Length++ }},
		{"the same run twice", partial, func(m *wire.Manifest) { m.Runs = append(m.Runs, m.Runs[0]) }},
		{"a run split in two without a gap", partial, func(m *wire.Manifest) {
			r := m.Runs[0]
			a, b := r, r
			a.ChunkCount, a.Length = 1, uint64(info.Offsets[1])
			b.FirstChunk, b.ChunkCount, b.FileOffset, b.Length = r.FirstChunk+1, r.ChunkCount-1, uint64(info.Offsets[1]), r.Length-uint64(info.Offsets[1])
			m.Runs = []wire.Run{a, b}
		}},
		{"no runs", partial, func(m *wire.Manifest) { m.Runs = nil }},
		{"empty run", partial, func(m *wire.Manifest) { m.Runs[0].ChunkCount = 0 }},
		{"uncompressed runs overlapping in the parent", plain, func(m *wire.Manifest) {
			r := m.Runs[0]
			m.Runs = []wire.Run{{FirstChunk: r.FirstChunk, ChunkCount: 1, Length: 100}, {FirstChunk: r.FirstChunk + 5, ChunkCount: 1, FileOffset: 100, Length: r.Length - 100}}
		}},
		{"chunk count mismatch", partial, func(m *wire.Manifest) { m.Runs[0].ChunkCount++ }},
		{"chunk offsets not increasing", partial, func(m *wire.Manifest) {
			i := *info
			i.Offsets = append([]int64(nil), info.Offsets...)
			i.Offsets[2] = i.Offsets[1]
			m.Compression = i.Append(nil, mustVersion(t, m))
		}},
		{"last chunk past the file", partial, func(m *wire.Manifest) { m.DataFileLength = uint64(info.Offsets[len(info.Offsets)-1]) + 2 }},
		{"data length beyond the chunks", partial, func(m *wire.Manifest) { m.DataLength += 1 << 20 }},
		{"file over the limit", partial, func(m *wire.Manifest) { m.DataFileLength = 1 << 60; m.Runs[0].Length = 1 << 60 }},
		{"index slice over the limit", partial, func(m *wire.Manifest) { m.IndexSliceLength = 1 << 40 }},
		{"no index slice", partial, func(m *wire.Manifest) { m.IndexSliceLength = 0 }},
		{"no partitions", partial, func(m *wire.Manifest) { m.Partitions = 0 }},
		{"unknown index slice format", partial, func(m *wire.Manifest) { m.IndexFormat = 7 }},
		{"Index.db spans for a BTI sstable", partial, func(m *wire.Manifest) {
			m.IndexFormat, m.Format, m.Version = wire.IndexBig, "bti", "da"
			m.Components = []wire.ComponentSpec{{Name: "Rows.db", Length: 1}}
		}},
		{"garbage statistics", partial, func(m *wire.Manifest) { m.Statistics = []byte{1, 2, 3} }},
		{"garbage compression", partial, func(m *wire.Manifest) { m.Compression = []byte{1, 2, 3} }},
		{"unknown version", partial, func(m *wire.Manifest) { m.Version = "zz" }},
		{"unknown format", partial, func(m *wire.Manifest) { m.Format = "../big" }},
		{"component on a BIG partial", partial, func(m *wire.Manifest) { m.Components = []wire.ComponentSpec{{Name: "Rows.db", Length: 1}} }},
		{"kind differs from Prepare", partial, func(m *wire.Manifest) { m.Kind = wire.KindEntire }},
		{"uncompressed with odd CRC chunk", plain, func(m *wire.Manifest) { m.ChunkLength = 1000 }},
		{"uncompressed lengths differ", plain, func(m *wire.Manifest) { m.DataLength++ }},
		{"component with a slash", entire, func(m *wire.Manifest) { m.Components[1].Name = "x/Index.db" }},
		{"component with dot-dot", entire, func(m *wire.Manifest) { m.Components[1].Name = "../Index.db" }},
		{"TOC as a component", entire, func(m *wire.Manifest) { m.Components[1].Name = "TOC.txt" }},
		{"component twice", entire, func(m *wire.Manifest) { m.Components[1].Name = m.Components[0].Name }},
		{"no Data.db", entire, func(m *wire.Manifest) {
			for i := range m.Components {
				if m.Components[i].Name == "Data.db" {
					m.Components = append(m.Components[:i], m.Components[i+1:]...)
					return
				}
			}
		}},
		{"Data.db length differs", entire, func(m *wire.Manifest) { m.DataFileLength++ }},
		{"entire with runs", entire, func(m *wire.Manifest) { m.Runs = []wire.Run{{Length: 1}} }},
		{"components over the limit", entire, func(m *wire.Manifest) { m.Components[1].Length = 1 << 62 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := clone(tc.base)
			tc.mutate(m)
			plan := clone(tc.base) // Prepare lists the unmutated kind and ID
			r := session(t, plan)
			st, err := r.Step(m)
			if err != nil {
				t.Fatalf("session error: %v", err)
			}
			if st.Receive != nil || st.Discard != m.SSTableID {
				t.Fatalf("accepted: %+v", st)
			}
			if len(st.Send) == 0 {
				t.Fatal("no Failure sent")
			}
			f, ok := st.Send[0].(*wire.Failure)
			if !ok || f.SSTableID != m.SSTableID || (f.Code != wire.CodeProtocol && f.Code != wire.CodeRefused) {
				t.Errorf("sent %+v", st.Send[0])
			}
			t.Log(f.Reason)
		})
	}
}

func TestDecide(t *testing.T) {
	ch := func(first, n, lo, hi int64) ChildFacts {
		return ChildFacts{FirstOrdinal: first, Partitions: n, Lo: lo, Hi: hi, Bytes: hi - lo}
	}
	for _, tc := range []struct {
		name  string
		c     Candidate
		kinds []wire.Kind
	}{
		{"no children", Candidate{ID: "a", DataLength: 100}, nil},
		{"everything", Candidate{ID: "a", DataLength: 100, Partitions: 10, Children: []ChildFacts{ch(0, 10, 0, 100)}}, []wire.Kind{wire.KindEntire}},
		{"wrapping halves meet", Candidate{ID: "a", DataLength: 100, Partitions: 10, Children: []ChildFacts{ch(0, 4, 0, 40), ch(4, 6, 40, 100)}}, []wire.Kind{wire.KindEntire}},
		{"a prefix", Candidate{ID: "a", DataLength: 100, Partitions: 10, Children: []ChildFacts{ch(0, 4, 0, 40)}}, []wire.Kind{wire.KindPartial}},
		{"a gap", Candidate{ID: "a", DataLength: 100, Partitions: 10, Children: []ChildFacts{ch(0, 4, 0, 40), ch(5, 5, 50, 100)}}, []wire.Kind{wire.KindPartial, wire.KindPartial}},
		{"one child with a gap from end to end", Candidate{ID: "a", DataLength: 100, Partitions: 9, Children: []ChildFacts{{FirstOrdinal: 0, Partitions: 9, Lo: 0, Hi: 100, Runs: 2}}}, []wire.Kind{wire.KindPartial}},
		{"refused", Candidate{ID: "a", Refusal: "legacy counter shards", DataLength: 100, Partitions: 10, Children: []ChildFacts{ch(0, 10, 0, 100)}}, []wire.Kind{wire.KindRows}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var kinds []wire.Kind
			for _, p := range Decide(tc.c) {
				kinds = append(kinds, p.Kind)
				if p.Reason == "" {
					t.Errorf("%s: no reason", p.ID)
				}
			}
			if !reflect.DeepEqual(kinds, tc.kinds) {
				t.Errorf("kinds %v, want %v", kinds, tc.kinds)
			}
		})
	}
}

func TestSenderScript(t *testing.T) {
	s := NewSender(Config{}.withDefaults().hello())
	if _, err := s.Step(&wire.StreamRequest{}); err == nil {
		t.Fatal("request before Hello accepted")
	}
	s = NewSender(Config{}.withDefaults().hello())
	out, err := s.Step(&wire.Hello{MinVersion: 1, MaxVersion: 9, Node: "r"})
	if err != nil || len(out) != 1 || out[0].(*wire.HelloAck).Version != wire.Version1 {
		t.Fatal(out, err)
	}
	req := &wire.StreamRequest{SessionID: wire.SessionID{7}, Operation: wire.OpFetch, Keyspace: "ks", Table: "t",
		Ranges: []wire.TokenRange{{}}, Resume: []wire.ResumePoint{{SSTableID: "b", VerifiedChunks: ResumeInstalled}}}
	if _, err := s.Step(req); err != nil || s.Request() == nil {
		t.Fatal(err)
	}
	p, err := s.Prepare([]wire.PlannedSSTable{{ID: "a", Kind: wire.KindPartial}, {ID: "b", Kind: wire.KindEntire}, {ID: "c", Kind: wire.KindRows}})
	if err != nil || len(p.SSTables) != 2 || p.SSTables[0].ID != "a" || p.SSTables[1].ID != "c" {
		t.Fatalf("prepare skipping resumed b: %+v %v", p, err)
	}
	if _, err := s.Step(&wire.Installed{SSTableID: "b"}); err == nil {
		t.Error("outcome for an unplanned sstable accepted")
	}
	s = NewSender(Config{}.withDefaults().hello())
	s.Step(&wire.Hello{MinVersion: 1, MaxVersion: 1})
	s.Step(req)
	s.Prepare([]wire.PlannedSSTable{{ID: "a", Kind: wire.KindPartial}})
	for _, m := range []wire.Message{&wire.Received{SSTableID: "a"}, &wire.Installed{SSTableID: "a"}} {
		if _, err := s.Step(m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Step(&wire.Installed{SSTableID: "a"}); err == nil {
		t.Error("second outcome accepted")
	}
	s = NewSender(Config{}.withDefaults().hello())
	s.Step(&wire.Hello{MinVersion: 1, MaxVersion: 1})
	s.Step(req)
	s.Prepare([]wire.PlannedSSTable{{ID: "a", Kind: wire.KindPartial}})
	s.Finished()
	s.Step(&wire.Failure{Code: wire.CodeChecksum, SSTableID: "a"})
	if _, err := s.Step(&wire.Complete{SessionID: wire.SessionID{7}}); err != nil || !s.Done() {
		t.Fatal(err)
	}
	if acked, ok := s.Outcome("a"); !acked || ok {
		t.Error("outcome of a")
	}
	bad := NewSender(Config{}.withDefaults().hello())
	if out, err := bad.Step(&wire.Hello{MinVersion: 5, MaxVersion: 6}); err == nil || out[0].(*wire.Failure).Code != wire.CodeVersion {
		t.Errorf("no common version: %v %v", out, err)
	}
}

func mustVersion(t testing.TB, m *wire.Manifest) version.Version {
	t.Helper()
	f, err := version.ParseFormat(m.Format)
	if err != nil {
		t.Fatal(err)
	}
	v, err := version.Parse(f, m.Version)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Sender and receiver derive where a resumed Data.db restarts from the same facts: the
// chunk offsets, or the CRC grid of an uncompressed file.
func TestDataResumeOffset(t *testing.T) {
	info := &compress.Info{ChunkLength: 16, Offsets: []int64{0, 10, 20}}
	for _, tc := range []struct {
		name    string
		info    *compress.Info
		chunk   uint32
		fileLen int64
		v       uint64
		off     int64
		ok      bool
	}{
		{"nothing verified", info, 16, 30, 0, 0, false},
		{"one chunk", info, 16, 30, 1, 10, true},
		{"every chunk", info, 16, 30, 3, 30, true},
		{"past the last chunk", info, 16, 30, 4, 0, false},
		{"uncompressed, default grid", nil, 0, 100 << 10, 1, 64 << 10, true},
		{"uncompressed, short last chunk", nil, 0, 100 << 10, 2, 100 << 10, true},
		{"uncompressed, past the end", nil, 0, 100 << 10, 3, 0, false},
		{"uncompressed, manifest grid", nil, 4096, 100 << 10, 3, 3 * 4096, true},
		{"huge count", nil, 4096, 100 << 10, ResumeInstalled - 1, 0, false},
	} {
		off, ok := dataResumeOffset(tc.info, tc.chunk, tc.fileLen, tc.v)
		if off != tc.off || ok != tc.ok {
			t.Errorf("%s: %d, %v; want %d, %v", tc.name, off, ok, tc.off, tc.ok)
		}
	}
}

func TestSenderResumed(t *testing.T) {
	s := NewSender(Config{}.withDefaults().hello())
	s.Step(&wire.Hello{MinVersion: 1, MaxVersion: 1})
	s.Step(&wire.StreamRequest{SessionID: wire.SessionID{7}, Operation: wire.OpFetch, Keyspace: "ks", Table: "t",
		Ranges: []wire.TokenRange{{}}, Resume: []wire.ResumePoint{
			{SSTableID: "a", VerifiedChunks: 12}, {SSTableID: "b", VerifiedChunks: ResumeInstalled}, {SSTableID: "gone", VerifiedChunks: 3}}})
	p, err := s.Prepare([]wire.PlannedSSTable{{ID: "a", Kind: wire.KindPartial}, {ID: "b", Kind: wire.KindEntire}, {ID: "c", Kind: wire.KindRows}})
	if err != nil || len(p.SSTables) != 2 {
		t.Fatal(p, err)
	}
	for id, want := range map[string]uint64{"a": 12, "b": 0, "c": 0, "gone": 0} {
		if got := s.Resumed(id); got != want {
			t.Errorf("Resumed(%s) = %d, want %d", id, got, want)
		}
	}
}

// An sstable received whole and waiting for a shared commit (Received) lets the next
// Manifest in; it cannot be announced again, and the session completes only once every
// pending sstable is settled (Installed or Failed), in any order.
func TestReceiverPendingCommits(t *testing.T) {
	partial, entire := manifests(t, "lz4")
	r := session(t, partial, entire)
	if st, err := r.Step(partial); err != nil || st.Receive == nil {
		t.Fatal(st, err)
	}
	r.Received(partial.SSTableID)
	if r.AllReceived() {
		t.Error("all received with the entire sstable still to come")
	}
	if st, err := r.Step(clone(partial)); err == nil || !reflect.DeepEqual(types(st.Send), []wire.MsgType{wire.MsgFailure}) {
		t.Errorf("second manifest of a pending sstable: %v %v", types(st.Send), err)
	}
	r = session(t, partial, entire)
	r.Step(partial)
	r.Received(partial.SSTableID)
	if st, err := r.Step(entire); err != nil || st.Receive == nil {
		t.Fatalf("next manifest while one is pending: %v %v", st, err)
	}
	r.Received(entire.SSTableID)
	if !r.AllReceived() || r.Done() {
		t.Fatalf("all received %v, done %v", r.AllReceived(), r.Done())
	}
	if st := r.Installed(entire.SSTableID, 1); !reflect.DeepEqual(types(st.Send), []wire.MsgType{wire.MsgReceived, wire.MsgInstalled}) || st.Done {
		t.Errorf("first settled: %v", types(st.Send))
	}
	st := r.Failed(partial.SSTableID, wire.CodeNoSpace, "commit failed")
	if !reflect.DeepEqual(types(st.Send), []wire.MsgType{wire.MsgFailure, wire.MsgComplete}) || !st.Done {
		t.Errorf("last settled: %v", types(st.Send))
	}
}

// A batch goes when it is full (count or bytes), before a big sstable, and at the end; an
// empty one never.
func TestCommitDue(t *testing.T) {
	for _, tc := range []struct {
		name        string
		count       int
		bytes, next int64
		all, want   bool
	}{
		{"nothing waiting", 0, 0, batchBytes, true, false},
		{"a few small ones", 3, 6 << 20, 2 << 20, false, false},
		{"count reached", 8, 16 << 20, 0, false, true},
		{"bytes reached", 2, batchBytes, 0, false, true},
		{"a big one next", 1, 2 << 20, batchBytes, false, true},
		{"nothing more to arrive", 1, 2 << 20, 0, true, true},
	} {
		if got := commitDue(tc.count, 8, tc.bytes, tc.next, tc.all); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The Manifest carries a slice.IndexFormat as the wire's IndexFormat of the same number (the
// wire package imports nothing of sluice's): the two must name the same formats.
func TestIndexFormatsAgree(t *testing.T) {
	for _, f := range []struct {
		s slice.IndexFormat
		w wire.IndexFormat
	}{{slice.IndexRecords, wire.IndexRecords}, {slice.IndexBig, wire.IndexBig}} {
		if wire.IndexFormat(f.s) != f.w || slice.IndexFormat(f.w) != f.s {
			t.Errorf("slice %s is wire %d", f.s, f.w)
		}
	}
}
