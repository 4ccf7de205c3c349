package stream

import (
	"errors"
	"fmt"
	"io"

	"github.com/sluicedb/sluice/wire"
)

// frameReader reads whole frames from a stream into one reused buffer that grows to the
// largest frame seen, never past Limits.MaxFrame (checked from the header alone).
type frameReader struct {
	r   io.Reader
	lim wire.Limits
	buf []byte
	n   int // valid bytes in buf
	off int // start of the next frame
}

// frameHeaderRoom is more than a Data frame's header ever takes.
const frameHeaderRoom = wire.MaxDataHeader

func newFrameReader(r io.Reader, lim wire.Limits) *frameReader {
	return &frameReader{r: r, lim: lim, buf: make([]byte, 64<<10)}
}

// next returns the next complete frame. The slice is valid until the next call. At a clean
// end of stream between frames it returns io.EOF; inside a frame io.ErrUnexpectedEOF.
func (fr *frameReader) next() ([]byte, error) {
	for {
		avail := fr.buf[fr.off:fr.n]
		_, bodyLen, hn, err := wire.ReadFrameHeader(avail, fr.lim)
		if err == nil && len(avail) >= hn+bodyLen {
			fr.off += hn + bodyLen
			return avail[:hn+bodyLen], nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		need := len(fr.buf)
		if err == nil {
			need = hn + bodyLen
		}
		// Make room: move the partial frame to the front, grow for a large frame.
		if fr.off > 0 {
			copy(fr.buf, avail)
			fr.n, fr.off = len(avail), 0
		}
		if need > len(fr.buf) {
			// Grow geometrically (with room for a header on top of a full payload), so that
			// frames whose headers differ by a byte do not each allocate a new megabyte.
			nb := make([]byte, max(need+frameHeaderRoom, 2*len(fr.buf)))
			copy(nb, fr.buf[:fr.n])
			fr.buf = nb
		}
		k, rerr := fr.r.Read(fr.buf[fr.n:])
		fr.n += k
		if rerr != nil && k == 0 {
			if errors.Is(rerr, io.EOF) {
				if fr.n == fr.off {
					return nil, io.EOF
				}
				return nil, fmt.Errorf("%w: stream ended inside a frame", io.ErrUnexpectedEOF)
			}
			return nil, rerr
		}
	}
}

// limit lowers the frame limit for the rest of the stream and gives back a buffer grown
// past it, so that a session holds no more than its current limit.
func (fr *frameReader) limit(lim wire.Limits) {
	fr.lim = lim
	if len(fr.buf) > lim.MaxFrame+frameHeaderRoom && fr.n-fr.off <= 64<<10 {
		nb := make([]byte, 64<<10)
		fr.n = copy(nb, fr.buf[fr.off:fr.n])
		fr.buf, fr.off = nb, 0
	}
}

// capFrame is lim with MaxFrame at most max.
func capFrame(lim wire.Limits, max int) wire.Limits {
	if lim.MaxFrame <= 0 || lim.MaxFrame > max {
		lim.MaxFrame = max
	}
	return lim
}

// message reads and decodes the next control message.
func (fr *frameReader) message() (wire.Message, error) {
	b, err := fr.next()
	if err != nil {
		return nil, err
	}
	m, _, err := wire.ParseMessage(b, fr.lim)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	fr.shrink()
	return m, nil
}

// controlBufferKeep is the most a control stream's frame buffer keeps between messages. A big
// sstable's Manifest is large (its CompressionInfo: 8 bytes per chunk, ~0.6 MiB for 1 GiB of
// data) and grows the buffer to hold it; the parsed message owns its bytes, or keeps the old
// buffer alive itself, so the buffer goes back to its first size for the rest of the session.
const controlBufferKeep = 64 << 10

// shrink replaces a buffer grown past controlBufferKeep by one of that size holding the
// bytes read ahead, when they fit. The old buffer is never written again.
func (fr *frameReader) shrink() {
	ahead := fr.buf[fr.off:fr.n]
	if len(fr.buf) <= controlBufferKeep || len(ahead) > controlBufferKeep/2 {
		return
	}
	nb := make([]byte, controlBufferKeep)
	fr.n, fr.off = copy(nb, ahead), 0
	fr.buf = nb
}

// writeMessages appends ms into buf and writes them with one call.
func writeMessages(w io.Writer, buf []byte, ms ...wire.Message) ([]byte, error) {
	buf = buf[:0]
	for _, m := range ms {
		buf = wire.AppendMessage(buf, m)
	}
	if len(buf) == 0 {
		return buf, nil
	}
	_, err := w.Write(buf)
	return buf, err
}
