package sstable

import (
	"os"
	"testing"
)

func TestProbeOneFlip(t *testing.T) {
	f := pick(t, []string{os.Getenv("FIX")})[0]
	prefix := copyFixture(t, f)
	p := prefix + "-" + os.Getenv("COMP")
	b, _ := os.ReadFile(p)
	var off int
	for _, c := range os.Getenv("OFF") { off = off*10 + int(c-'0') }
	b[off] ^= 0x40
	os.WriteFile(p, b, 0o644)
	rep, _ := Verify(prefix, VerifyOptions{Extended: true})
	for i, pr := range rep.Problems { if i < 12 || i > len(rep.Problems)-3 { t.Log(pr) } }
	t.Log(len(rep.Problems))
}
