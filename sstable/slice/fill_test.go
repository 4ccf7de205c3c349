package slice

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// The filled layout as golden traces (testdata/fill): a layout change shows as a diff there.
// `layout chunk=L filler=F [unfilled=k,...]` with one run per input line (`lo hi`, parent
// uncompressed bytes) prints the child's stream (filler regions and runs, child positions),
// which parent chunks it keeps verbatim, each child chunk (V: verbatim, E: re-encoded), and the
// runs placed off the grid. Every layout is also checked against its invariants.
// Regenerate with `go test ./sstable/slice -run TestFillLayout -rewrite`.
func TestFillLayout(t *testing.T) {
	datadriven.RunTest(t, "testdata/fill", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "layout" {
			return "unknown command " + d.Cmd
		}
		var L, minFiller int
		d.ScanArgs(t, "chunk", &L)
		d.ScanArgs(t, "filler", &minFiller)
		unfilled := map[int]bool{}
		if d.HasArg("unfilled") {
			var ks []string
			d.ScanArgs(t, "unfilled", &ks)
			for _, k := range ks {
				n, _ := strconv.Atoi(k)
				unfilled[n] = true
			}
		}
		var runs []RunPlan
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			var lo, hi int64
			if _, err := fmt.Sscan(line, &lo, &hi); err != nil {
				return err.Error()
			}
			runs = append(runs, RunPlan{Lo: lo, Hi: hi})
		}
		fl := planFill(int64(L), runs, int64(minFiller), unfilled)
		var b strings.Builder
		if err := fl.check(); err != nil {
			fmt.Fprintf(&b, "INVALID: %v\n", err)
		}
		for _, s := range fl.stretches() {
			if s.Region >= 0 {
				fmt.Fprintf(&b, "filler [%d,%d) before run %d\n", s.At, s.At+s.Len, fl.Regions[s.Region].Run)
				continue
			}
			fmt.Fprintf(&b, "run    [%d,%d) <- parent [%d,%d)\n", s.At, s.At+s.Len, s.PLo, s.PLo+s.Len)
		}
		for _, v := range fl.Verbatim {
			fmt.Fprintf(&b, "verbatim child chunks %d..%d <- parent chunks %d..%d\n", v.Chunk, v.Chunk+v.N-1, v.Parent, v.Parent+v.N-1)
		}
		chunks := make([]byte, fl.Chunks)
		next := 0
		for c := range chunks {
			_, ok, n := fl.chunkSource(c, next)
			next = n
			chunks[c] = 'E'
			if ok {
				chunks[c] = 'V'
			}
		}
		fmt.Fprintf(&b, "chunks %s\ndata %d, filler %d, re-encoded runs %d\n", chunks, fl.DataLength, fl.fillerBytes(), fl.Encoded)
		return b.String()
	})
}
