package stream

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/wire"
)

func frames(ms ...wire.Message) []byte {
	var b []byte
	for _, m := range ms {
		b = wire.AppendMessage(b, m)
	}
	return b
}

// FuzzReceiver feeds arbitrary frame sequences to a Receiver that has sent its request:
// it may fail the session, never panic, and every Data frame it accepts lies within what a
// validated Manifest announced.
func FuzzReceiver(f *testing.F) {
	partial, entire := manifests(f, "lz4")
	sid := wire.SessionID{1}
	prep := &wire.Prepare{SessionID: sid, SSTables: []wire.PlannedSSTable{{ID: partial.SSTableID, Kind: partial.Kind}, {ID: entire.SSTableID, Kind: entire.Kind}}}
	f.Add(frames(&wire.HelloAck{Version: 1}, prep, partial, &wire.Data{SSTableID: partial.SSTableID, Payload: []byte{1, 2, 3}}, &wire.Failure{SSTableID: entire.SSTableID}))
	f.Add(frames(&wire.HelloAck{Version: 1}, prep, entire, &wire.Data{SSTableID: entire.SSTableID, Stream: wire.StreamComponent, Component: 1, Payload: []byte{9}}))
	f.Add(frames(&wire.HelloAck{Version: 1}, &wire.Prepare{SessionID: sid}))
	f.Fuzz(func(t *testing.T, b []byte) { fuzzReceiver(t, b) })
}

func fuzzReceiver(t *testing.T, b []byte) {
	sid := wire.SessionID{1}
	{
		r := NewReceiver(Config{}, wire.StreamRequest{SessionID: sid, Operation: wire.OpFetch, Keyspace: "k", Table: "t"})
		r.Start()
		var in *Incoming
		for len(b) > 0 {
			m, n, err := wire.ParseMessage(b, wire.Limits{})
			if err != nil {
				return
			}
			b = b[n:]
			if d, ok := m.(*wire.Data); ok {
				if in != nil && in.Accept(d) == nil && in.Received() > in.Total() {
					t.Fatalf("accepted %d of %d bytes", in.Received(), in.Total())
				}
				continue
			}
			st, err := r.Step(m)
			if err != nil {
				return
			}
			if st.Receive != nil {
				in = st.Receive
			}
			if st.Discard != "" && in != nil && in.ID == st.Discard {
				in = nil
			}
		}
	}
}

// FuzzSender feeds arbitrary frame sequences to a Sender: no panic, and a session that
// completes was planned first.
func FuzzSender(f *testing.F) {
	req := &wire.StreamRequest{SessionID: wire.SessionID{2}, Operation: wire.OpFetch, Keyspace: "k", Table: "t", Ranges: []wire.TokenRange{{}}}
	f.Add(frames(&wire.Hello{MinVersion: 1, MaxVersion: 1}, req, &wire.Installed{SSTableID: "a"}, &wire.Complete{SessionID: wire.SessionID{2}}))
	f.Add(frames(&wire.Hello{MinVersion: 1, MaxVersion: 3}, req, &wire.Failure{SSTableID: "a"}, &wire.Received{SSTableID: "a"}))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := NewSender(Config{}.withDefaults().hello())
		prepared := false
		for len(b) > 0 {
			m, n, err := wire.ParseMessage(b, wire.Limits{})
			if err != nil {
				return
			}
			b = b[n:]
			if _, err := s.Step(m); err != nil {
				return
			}
			if s.Request() != nil && !prepared {
				if _, err := s.Prepare([]wire.PlannedSSTable{{ID: "a", Kind: wire.KindPartial}}); err != nil {
					t.Fatal(err)
				}
				prepared = true
			}
			if s.Done() && !prepared {
				t.Fatal("done without a plan")
			}
		}
	})
}

// snapshot lists every file under root with its size and modification time.
func snapshot(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			out = append(out, fmt.Sprint(p, fi.ModTime(), fi.Size()))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// A peer with a valid certificate that sends random bytes or random valid-looking frames
// on the control stream neither crashes the server nor makes it write anything; the server
// keeps serving.
func TestServerSurvivesFuzzedPeers(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	parents := genTable(t, root, "t", genSpec{version: "oa", compression: "lz4", seeds: []uint64{1}, partitions: 30})
	before := snapshot(t, root)
	_, addr := testServer(t, Config{HandshakeTimeout: time.Second}, dirCatalog{root}, ca.server(t))
	r := rand.New(rand.NewPCG(1, 2))
	partial, entire := manifests(t, "lz4")
	valid := []wire.Message{
		&wire.Hello{MinVersion: 1, MaxVersion: 1, Node: "x"},
		&wire.StreamRequest{Operation: wire.OpFetch, Keyspace: "ks", Table: "t", Ranges: []wire.TokenRange{{Left: []byte{1, 2, 3, 4, 5, 6, 7, 8}}}},
		&wire.StreamRequest{Operation: wire.OpFetch, Keyspace: "ks", Table: "t", Ranges: []wire.TokenRange{{Left: []byte{1}}}},
		&wire.StreamRequest{Operation: wire.OpRepair, Keyspace: "ks", Table: "nope", Ranges: []wire.TokenRange{{}}},
		partial, entire, &wire.Installed{SSTableID: "x"}, &wire.Complete{}, &wire.Keepalive{}, &wire.Failure{Code: 99},
		&wire.Data{SSTableID: "x", Payload: []byte("junk")},
	}
	for i := 0; i < 12; i++ {
		var b []byte
		if i%3 == 0 {
			b = make([]byte, r.IntN(4096))
			for k := range b {
				b[k] = byte(r.Uint32())
			}
		} else {
			for k := 0; k < 1+r.IntN(6); k++ {
				b = wire.AppendMessage(b, valid[r.IntN(len(valid))])
			}
			if i%2 == 0 {
				b[r.IntN(len(b))] ^= byte(1 + r.IntN(255))
			}
		}
		func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			conn, err := quic.DialAddr(ctx, addr, withALPN(ca.client(t, ca)), quicConfig(Config{}.withDefaults()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.CloseWithError(0, "")
			s, err := conn.OpenStreamSync(ctx)
			if err != nil {
				t.Fatal(err)
			}
			s.Write(b)
			s.Close()
			// Read whatever the server answers until it ends the session.
			buf := make([]byte, 64<<10)
			s.SetReadDeadline(time.Now().Add(3 * time.Second))
			for {
				if _, err := s.Read(buf); err != nil {
					break
				}
			}
		}()
	}
	if after := snapshot(t, root); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("the server's data dir changed:\n%v\n%v", before, after)
	}
	all, _ := token.ParseRanges(token.Murmur3, "(0,0]")
	res, err := Fetch(context.Background(), Config{}, ca.client(t, ca), FetchRequest{Peer: addr, Keyspace: "ks", Table: "t", Ranges: all, Dir: t.TempDir()}, nil)
	if err != nil {
		t.Fatalf("server no longer serves: %v", err)
	}
	checkFetched(t, parents, all, res)
}
