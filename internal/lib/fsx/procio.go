package fsx

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// IOStats is the process's I/O accounting from /proc/self/io.
type IOStats struct {
	RChar               int64 // bytes read through read-like syscalls, page cache hits included
	WChar               int64 // bytes written through write-like syscalls
	SyscR               int64 // read-like syscalls
	SyscW               int64 // write-like syscalls
	ReadBytes           int64 // bytes fetched from storage on this process's behalf
	WriteBytes          int64 // bytes sent to storage (dirtied) on this process's behalf
	CancelledWriteBytes int64 // dirtied bytes later truncated away before writeback
}

// Sub returns s - o, the I/O done between two samples.
func (s IOStats) Sub(o IOStats) IOStats {
	return IOStats{
		RChar: s.RChar - o.RChar, WChar: s.WChar - o.WChar,
		SyscR: s.SyscR - o.SyscR, SyscW: s.SyscW - o.SyscW,
		ReadBytes: s.ReadBytes - o.ReadBytes, WriteBytes: s.WriteBytes - o.WriteBytes,
		CancelledWriteBytes: s.CancelledWriteBytes - o.CancelledWriteBytes,
	}
}

// ProcIO reads /proc/self/io (summed over all the process's threads). Where the file does not
// exist (not Linux, or a kernel without task I/O accounting) the error wraps
// errors.ErrUnsupported.
func ProcIO() (IOStats, error) {
	data, err := os.ReadFile("/proc/self/io")
	if errors.Is(err, fs.ErrNotExist) {
		return IOStats{}, fmt.Errorf("%w: %w", errors.ErrUnsupported, err)
	}
	if err != nil {
		return IOStats{}, err
	}
	return parseProcIO(data)
}

// parseProcIO parses "key: value" lines. Unknown keys are skipped (newer kernels may add some);
// every known key must be present exactly once with a non-negative decimal value.
func parseProcIO(data []byte) (IOStats, error) {
	var s IOStats
	fields := map[string]*int64{
		"rchar": &s.RChar, "wchar": &s.WChar, "syscr": &s.SyscR, "syscw": &s.SyscW,
		"read_bytes": &s.ReadBytes, "write_bytes": &s.WriteBytes,
		"cancelled_write_bytes": &s.CancelledWriteBytes,
	}
	seen := make(map[string]bool, len(fields))
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			return IOStats{}, fmt.Errorf("fsx: /proc/self/io: malformed line %q", sc.Text())
		}
		dst, known := fields[key]
		if !known {
			continue
		}
		if seen[key] {
			return IOStats{}, fmt.Errorf("fsx: /proc/self/io: %s twice", key)
		}
		v, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		if err != nil || v < 0 {
			return IOStats{}, fmt.Errorf("fsx: /proc/self/io: %s: bad value %q", key, val)
		}
		*dst = v
		seen[key] = true
	}
	if err := sc.Err(); err != nil {
		return IOStats{}, fmt.Errorf("fsx: /proc/self/io: %w", err)
	}
	if len(seen) != len(fields) {
		return IOStats{}, fmt.Errorf("fsx: /proc/self/io: %d of %d fields present", len(seen), len(fields))
	}
	return s, nil
}
