package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/wire"
)

type countingCloser struct {
	io.Reader
	closed int
}

func (c *countingCloser) Close() error { c.closed++; return nil }

// A read-ahead source reads as the source does, in any read sizes, and closes it once.
func TestReadAheadReadsInOrder(t *testing.T) {
	want := make([]byte, 10_000)
	for i := range want {
		want[i] = byte(i * 31)
	}
	src := &countingCloser{Reader: bytes.NewReader(want)}
	ra := newReadAhead(src, 777, 2)
	var got []byte
	buf := make([]byte, 1000)
	for {
		n, err := ra.Read(buf[:1+len(got)%1000])
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	ra.Close()
	if !bytes.Equal(got, want) || src.closed != 1 {
		t.Errorf("read %d bytes (equal %v), source closed %d times", len(got), bytes.Equal(got, want), src.closed)
	}
}

// The source's error reaches the reader after the bytes before it; Close before the end
// stops the goroutine and closes the source.
func TestReadAheadErrorsAndEarlyClose(t *testing.T) {
	boom := errors.New("index changed")
	src := &countingCloser{Reader: io.MultiReader(bytes.NewReader(make([]byte, 100)), iotestErr{boom})}
	ra := newReadAhead(src, 64, 1)
	got, err := io.ReadAll(ra)
	if len(got) != 100 || !errors.Is(err, boom) {
		t.Errorf("read %d bytes, err %v", len(got), err)
	}
	ra.Close()
	endless := &countingCloser{Reader: zeros{}}
	ra = newReadAhead(endless, 64, 2)
	if _, err := ra.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	ra.Close()
	if endless.closed != 1 {
		t.Errorf("early Close closed the source %d times", endless.closed)
	}
}

type iotestErr struct{ err error }

func (e iotestErr) Read([]byte) (int, error) { return 0, e.err }

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// recordingPlane is an outbound that keeps every frame it is given, payload read as the
// QUIC and TLS planes read it (planeLink.frame).
type recordingPlane struct {
	link   planeLink
	frames []wire.Data
	bytes  map[wire.DataStream][]byte
}

func (p *recordingPlane) open(context.Context, string) error                  { return nil }
func (p *recordingPlane) shared() bool                                        { return false }
func (p *recordingPlane) finish(_ context.Context, _ string, err error) error { return err }
func (p *recordingPlane) write(_ context.Context, d *wire.Data, src *source, done, n int64) error {
	frame, err := p.link.frame(d, src, done, n)
	if err != nil {
		return err
	}
	if uint64(len(p.bytes[d.Stream])) != d.Offset {
		return fmt.Errorf("%v frame at %d after %d bytes", d.Stream, d.Offset, len(p.bytes[d.Stream]))
	}
	p.bytes[d.Stream] = append(p.bytes[d.Stream], frame[len(frame)-int(n):]...)
	p.frames = append(p.frames, *d)
	return nil
}

// The index slice made ahead rides along between the runs' frames once a frame of it is
// ready, each stream still in order and whole.
func TestPumpInterleavesTheIndexMadeAhead(t *testing.T) {
	runs := make([]byte, 10<<10)
	index := make([]byte, 3<<10)
	for i := range runs {
		runs[i] = byte(i)
	}
	for i := range index {
		index[i] = byte(i * 7)
	}
	f, err := os.CreateTemp(t.TempDir(), "runs")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(runs); err != nil {
		t.Fatal(err)
	}
	ra := newReadAhead(&countingCloser{Reader: bytes.NewReader(index)}, 1<<10, 3)
	defer ra.Close()
	for deadline := time.Now().Add(5 * time.Second); len(ra.pieces) < 3 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	ss := &sendSession{srv: &Server{out: NewLimiter(0)}, buf: make([]byte, hdrRoom+1<<10), tr: newTracker("s", "p", Sending, "ks", "t")}
	plane := &recordingPlane{link: ss, bytes: map[wire.DataStream][]byte{}}
	err = ss.pump(context.Background(), plane, "id", []source{
		{stream: wire.StreamRuns, r: fileStorage{}.readable(f, false), n: int64(len(runs))},
		{stream: wire.StreamIndex, seq: ra, n: int64(len(index))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(plane.bytes[wire.StreamRuns], runs) || !bytes.Equal(plane.bytes[wire.StreamIndex], index) {
		t.Fatal("a stream arrived out of order or incomplete")
	}
	var order []wire.DataStream
	for _, d := range plane.frames {
		order = append(order, d.Stream)
	}
	if order[len(order)-1] != wire.StreamRuns {
		t.Errorf("frames %v: the index slice did not ride along with the runs", order)
	}
}

// With small frames the index slice's frames interleave with the runs' on every plane, and
// the receiver, rebuilding a BIG child beside its receive loop (and holding a BTI one's
// slice), installs exactly the partitions of the ranges.
func TestFetchWithInterleavedIndexFrames(t *testing.T) {
	for _, tr := range []string{TransportQUIC, TransportTLS, TransportTCP} {
		t.Run(tr, func(t *testing.T) {
			ca := newTestCA(t)
			root := t.TempDir()
			n := startNode(t, Config{Transport: tr, FrameSize: 1 << 10}, dirCatalog{root}, ca.server(t), "127.0.0.1:0")
			for name, spec := range map[string]genSpec{
				"big": {version: "oa", compression: "lz4", seeds: []uint64{1, 2}, partitions: 600},
				"bti": {version: "da", compression: "none", seeds: []uint64{3}, partitions: 600},
			} {
				parents := genTable(t, root, name, spec)
				ranges, _ := token.ParseRanges(token.Murmur3, "(-6000000000000000000,-1000000000000000000],(2000000000000000000,7000000000000000000]")
				res, err := Fetch(context.Background(), Config{Transport: tr}, ca.client(t, ca),
					FetchRequest{Peer: n.addr, Keyspace: "ks", Table: name, Ranges: ranges, Dir: t.TempDir()}, nil)
				if err != nil {
					t.Fatal(name, err)
				}
				checkFetched(t, parents, ranges, res)
				for _, f := range res.SSTables {
					if f.Kind != "partial" {
						t.Errorf("%s: %s fetched %s, want partial", name, f.SSTable, f.Kind)
					}
				}
			}
		})
	}
}
