package wire

import (
	"encoding/binary"
	"fmt"
	"io"
)

// MaxDataHeader bounds a Data frame's header (frame header, the fields before the payload,
// the payload's tag and length): a reader of the TCP data plane buffers at most this much
// before the payload, which it then splices.
const MaxDataHeader = 512

// DataHeaderScratch is the scratch ParseDataHeader needs.
const DataHeaderScratch = MaxDataHeader + 24

// ParseDataHeader decodes the Data frame header at the start of b, up to and including the
// Payload field's length, into d (d.Payload nil), and returns the header's length and the
// payload's: the TCP data plane reads a frame's header this way and moves its payload from
// the socket to the file itself. io.EOF means b holds only part of the header. The fields
// before the payload are decoded by ParseData on a copy of the header whose payload is cut to
// nothing, so the data plane accepts exactly what ParseData accepts; scratch, of at least
// DataHeaderScratch bytes, holds that copy. A complete frame of another type fails with
// ErrUnexpectedMessage, a malformed or oversized header with ErrMalformed.
func ParseDataHeader(b, scratch []byte, lim Limits, d *Data) (hn int, payload int64, err error) {
	t, bodyLen, fh, err := ReadFrameHeader(b, lim)
	if err != nil {
		return 0, 0, err
	}
	if t != MsgData {
		return 0, 0, fmt.Errorf("%w: %v frame where Data was expected", ErrUnexpectedMessage, t)
	}
	end := fh + bodyLen
	for p := fh; ; {
		tag, tn := binary.Uvarint(b[p:])
		if tn == 0 {
			return 0, 0, io.EOF
		}
		if tn < 0 {
			return 0, 0, fmt.Errorf("Data field tag: %w", ErrMalformed)
		}
		n, ln := binary.Uvarint(b[p+tn:])
		if ln == 0 {
			return 0, 0, io.EOF
		}
		if ln < 0 || n > uint64(end-(p+tn+ln)) || p+tn+ln > end {
			return 0, 0, fmt.Errorf("Data field %d overruns the frame: %w", tag, ErrMalformed)
		}
		if tag == dataPayload {
			if p+tn+ln+int(n) != end {
				return 0, 0, fmt.Errorf("Data payload is not the frame's last field: %w", ErrMalformed)
			}
			body := p - fh + tn + 1 // the fields before the payload, its tag and a zero length
			if body > MaxDataHeader {
				return 0, 0, fmt.Errorf("Data header of %d bytes: %w", body, ErrMalformed)
			}
			h := binary.AppendUvarint(scratch[:0], uint64(MsgData))
			h = binary.AppendUvarint(h, uint64(body))
			h = append(h, b[fh:p+tn]...)
			h = append(h, 0)
			if _, err := ParseData(h, lim, d); err != nil {
				return 0, 0, err
			}
			d.Payload = nil
			return p + tn + ln, int64(n), nil
		}
		// A field before the payload must lie whole inside the header buffer.
		if p+tn+ln+int(n) > len(b) {
			if p+tn+ln+int(n) > MaxDataHeader {
				return 0, 0, fmt.Errorf("Data header longer than %d bytes: %w", MaxDataHeader, ErrMalformed)
			}
			return 0, 0, io.EOF
		}
		p += tn + ln + int(n)
	}
}
