package sstable

import "github.com/sluicedb/sluice/sstable/compress"

// DataCursorForTest exposes the verifier's data cursor to the external tests.
type DataCursorForTest struct{ c *dataCursor }

func NewDataCursorForTest(r *compress.Reader) *DataCursorForTest {
	return &DataCursorForTest{newDataCursor(r, nil)}
}

func (d *DataCursorForTest) BytesAt(pos int64, n int) ([]byte, error) { return d.c.bytesAt(pos, n) }

// Held is the capacity of the cursor's carry buffer.
func (d *DataCursorForTest) Held() int { return cap(d.c.carry) }
