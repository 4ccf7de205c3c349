package stream

import (
	"bytes"
	"errors"
	"io"
	"testing"
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
