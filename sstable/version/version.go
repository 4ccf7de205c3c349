// Package version owns SSTable format versions: the BIG and BTI formats, the two-letter version
// strings (md, me, nb, nc, oa, da) and the feature flags each implies, mirroring Cassandra's
// BigFormat.BigVersion and BtiFormat.BtiVersion. Every component codec asks a Version what
// layout to use rather than comparing version strings itself.
//
// It is pure code and imports only the standard library.
package version

import (
	"errors"
	"fmt"
)

// Format is the sstable format family.
type Format uint8

const (
	Big Format = iota + 1
	BTI
)

// String is the name used in file names ("big", "bti").
func (f Format) String() string {
	switch f {
	case Big:
		return "big"
	case BTI:
		return "bti"
	}
	return "unknown"
}

// ParseFormat reads "big" or "bti".
func ParseFormat(s string) (Format, error) {
	switch s {
	case "big":
		return Big, nil
	case "bti":
		return BTI, nil
	}
	return 0, fmt.Errorf("%w: format %q", ErrUnsupported, s)
}

// ErrUnsupported reports a format or version sluice cannot read.
var ErrUnsupported = errors.New("unsupported sstable version")

// Version is one format version, e.g. big "nb" or bti "da".
type Version struct {
	Format Format
	Name   string // two lower-case letters
}

// Supported lists what sluice reads. Writable lists what it writes.
var (
	Supported = []Version{{Big, "md"}, {Big, "me"}, {Big, "nb"}, {Big, "nc"}, {Big, "oa"}, {BTI, "da"}}
	Writable  = []Version{{Big, "nb"}, {Big, "nc"}, {Big, "oa"}, {BTI, "da"}}
)

// Parse validates a format/version pair against the supported set.
func Parse(f Format, name string) (Version, error) {
	v := Version{Format: f, Name: name}
	for _, s := range Supported {
		if s == v {
			return v, nil
		}
	}
	return Version{}, fmt.Errorf("%w: %s-%s (supported: big md me nb nc oa, bti da)", ErrUnsupported, name, f)
}

// ParseWritable is Parse restricted to the versions sluice can write.
func ParseWritable(name string) (Version, error) {
	for _, s := range Writable {
		if s.Name == name {
			return s, nil
		}
	}
	return Version{}, fmt.Errorf("%w: cannot write %q (writable: nb nc oa da)", ErrUnsupported, name)
}

func (v Version) String() string { return v.Name + "-" + v.Format.String() }

func (v Version) atLeast(s string) bool { return v.Name >= s }

func (v Version) isBTI() bool { return v.Format == BTI }

// HasCommitLogLowerBound: Stats carries commitLogLowerBound (mb+).
func (v Version) HasCommitLogLowerBound() bool { return v.isBTI() || v.atLeast("mb") }

// HasCommitLogIntervals: Stats carries commitLogIntervals (mc+).
func (v Version) HasCommitLogIntervals() bool { return v.isBTI() || v.atLeast("mc") }

// HasMaxCompressedLength: CompressionInfo has maxCompressedLength; raw chunks possible (na+).
func (v Version) HasMaxCompressedLength() bool { return v.isBTI() || v.atLeast("na") }

// HasPendingRepair: Stats carries pendingRepair and isTransient (na+).
func (v Version) HasPendingRepair() bool { return v.isBTI() || v.atLeast("na") }

// HasOldBfFormat: Filter.db words are byte-swapped (< na).
func (v Version) HasOldBfFormat() bool { return !v.isBTI() && !v.atLeast("na") }

// HasMetadataChecksum: Statistics.db carries CRC32s (na+).
func (v Version) HasMetadataChecksum() bool { return v.isBTI() || v.atLeast("na") }

// HasOriginatingHostID: Stats carries the originating host id (me+ in m*, nb+).
func (v Version) HasOriginatingHostID() bool {
	if v.isBTI() {
		return true
	}
	if v.Name[0] == 'm' {
		return v.atLeast("me")
	}
	return v.atLeast("nb")
}

// HasLegacyMinMax: Stats carries the legacy min/max clustering value lists (m*, n*).
func (v Version) HasLegacyMinMax() bool { return !v.isBTI() && (v.Name[0] == 'm' || v.Name[0] == 'n') }

// HasImprovedMinMax: Stats carries the covered clustering slice (nc+, BTI).
func (v Version) HasImprovedMinMax() bool { return v.isBTI() || v.atLeast("nc") }

// HasPartitionLevelDeletionsMarker: Stats carries hasPartitionLevelDeletions (nc+, BTI).
func (v Version) HasPartitionLevelDeletionsMarker() bool { return v.isBTI() || v.atLeast("nc") }

// HasKeyRange: Stats carries first/last key (nc+, BTI da).
func (v Version) HasKeyRange() bool { return v.isBTI() || v.atLeast("nc") }

// HasUIntDeletionTime: the oa/da DeletionTime encoding and unsigned local deletion times.
func (v Version) HasUIntDeletionTime() bool { return v.isBTI() || v.atLeast("oa") }

// HasTokenSpaceCoverage: Stats ends with tokenSpaceCoverage (oa+, BTI da).
func (v Version) HasTokenSpaceCoverage() bool { return v.isBTI() || v.atLeast("oa") }

// HasAccurateMinMax: the legacy min/max clustering values are trustworthy (md+).
func (v Version) HasAccurateMinMax() bool { return v.isBTI() || v.atLeast("md") }
