package version

import "testing"

func TestFlagsMatchFormatTable(t *testing.T) {
	type flags struct{ maxComp, oldBf, crc, host, legacyMM, improvedMM, keyRange, uintDT, tsc bool }
	cases := map[string]flags{
		"md-big": {false, true, false, false, true, false, false, false, false},
		"me-big": {false, true, false, true, true, false, false, false, false},
		"nb-big": {true, false, true, true, true, false, false, false, false},
		"nc-big": {true, false, true, true, true, true, true, false, false},
		"oa-big": {true, false, true, true, false, true, true, true, true},
		"da-bti": {true, false, true, true, false, true, true, true, true},
	}
	for _, v := range Supported {
		want, ok := cases[v.String()]
		if !ok {
			t.Fatalf("no expectation for %s", v)
		}
		got := flags{v.HasMaxCompressedLength(), v.HasOldBfFormat(), v.HasMetadataChecksum(), v.HasOriginatingHostID(),
			v.HasLegacyMinMax(), v.HasImprovedMinMax(), v.HasKeyRange(), v.HasUIntDeletionTime(), v.HasTokenSpaceCoverage()}
		if got != want {
			t.Errorf("%s: flags %+v, want %+v", v, got, want)
		}
	}
}

func TestParseRejectsUnknown(t *testing.T) {
	if _, err := Parse(Big, "ka"); err == nil {
		t.Error("ka accepted")
	}
	if _, err := Parse(BTI, "nb"); err == nil {
		t.Error("bti nb accepted")
	}
	if _, err := ParseWritable("md"); err == nil {
		t.Error("md writable")
	}
}
