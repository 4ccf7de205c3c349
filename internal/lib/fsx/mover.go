package fsx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Config configures a Mover. The zero value is the default.
type Config struct {
	// Alignment is the clone granularity in bytes, a power of two. Zero (the default) means the
	// destination file system's block size, queried once per file system. A caller may choose
	// a larger value, such as the 64 KiB that Cassandra's splitter uses, to plan layouts before
	// knowing the file system; a value that is not a multiple of the real block size makes
	// clones fail and the directory is then marked unsupported.
	Alignment int64
	// MinClone is the smallest middle worth cloning; a request whose aligned middle is shorter
	// is copied whole. Zero (the default) clones any middle of at least one block.
	MinClone int64
}

func (c Config) validate() error {
	if c.Alignment < 0 || c.Alignment&(c.Alignment-1) != 0 {
		return fmt.Errorf("fsx: Config.Alignment %d is not zero or a power of two", c.Alignment)
	}
	if c.MinClone < 0 {
		return fmt.Errorf("fsx: Config.MinClone %d is negative", c.MinClone)
	}
	return nil
}

// Capability is what a Mover knows about reflink in a directory.
type Capability uint8

const (
	CapabilityUnknown     Capability = iota // no clone attempted yet
	CapabilitySupported                     // a clone succeeded
	CapabilityUnsupported                   // a clone failed with ErrCloneUnsupported; later moves copy
)

func (c Capability) String() string {
	switch c {
	case CapabilitySupported:
		return "supported"
	case CapabilityUnsupported:
		return "unsupported"
	}
	return "unknown"
}

// Mover moves byte ranges between local files, sharing extents where it can and copying where
// it cannot. It remembers, per destination directory, whether reflink works there: the first
// clone is tried optimistically and a failure wrapping ErrCloneUnsupported turns cloning off for
// that directory for the Mover's lifetime. It also caches each file system's block size.
// A Mover is safe for concurrent use; the files passed to one Move must not be closed during it.
type Mover struct {
	cfg Config

	mu     sync.Mutex
	caps   map[string]Capability // cleaned absolute destination directory → capability
	blocks map[uint64]int64      // device → file system block size

	// clone is CloneRange; tests replace it to count attempts.
	clone func(dst *os.File, dstOff int64, src *os.File, srcOff, n int64) error
}

// NewMover returns a Mover, or an error naming the invalid Config field.
func NewMover(cfg Config) (*Mover, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Mover{
		cfg:    cfg,
		caps:   make(map[string]Capability),
		blocks: make(map[uint64]int64),
		clone:  CloneRange,
	}, nil
}

// Reflink reports what the Mover has learnt about cloning into dir.
func (m *Mover) Reflink(dir string) Capability {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return CapabilityUnknown
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.caps[abs]
}

// Move writes src's n bytes at srcOff into dst at dstOff. With allowReflink, and when both
// files are on one file system and the destination directory is not known to lack reflink, it
// clones the largest block-aligned middle of the range and copies the unaligned head and tail
// with CopyRange; that needs srcOff and dstOff congruent modulo the block size, and otherwise
// (or for a middle shorter than Config.MinClone) the whole range is copied. A clone failing
// with ErrCloneUnsupported marks the directory unsupported and the middle is copied; any other
// error is returned. Positional semantics are CopyRange's.
//
// On error the destination range holds an unspecified mix of old and new bytes; the caller
// discards the file (Install.Abort).
func (m *Mover) Move(dst *os.File, dstOff int64, src *os.File, srcOff, n int64, allowReflink bool) (Stats, error) {
	var st Stats
	if err := checkRange(dstOff, srcOff, n); err != nil {
		return st, newRangeError("move", dst, dstOff, src, srcOff, n, err)
	}
	if n == 0 {
		return st, nil
	}
	if allowReflink && reflinkPlatform {
		if done, err := m.moveCloning(&st, dst, dstOff, src, srcOff, n); done || err != nil {
			return st, err
		}
	}
	err := m.copy(&st, dst, dstOff, src, srcOff, n)
	return st, err
}

// moveCloning does the Move with a clone if the plan has one; done is false when it moved
// nothing and the caller should copy the whole range.
func (m *Mover) moveCloning(st *Stats, dst *os.File, dstOff int64, src *os.File, srcOff, n int64) (done bool, err error) {
	dir, err := filepath.Abs(filepath.Dir(dst.Name()))
	if err != nil {
		return false, err
	}
	if m.Reflink(dir) == CapabilityUnsupported {
		return false, nil
	}
	srcDev, srcSize, err := statDevSize(src)
	if err != nil {
		return false, err
	}
	dstDev, dstSize, err := statDevSize(dst)
	if err != nil {
		return false, err
	}
	if srcDev != dstDev {
		// Extents cannot be shared across file systems. That is a property of this pair, not of
		// the directory, so the directory is not marked.
		return false, nil
	}
	align, err := m.alignment(dst, dstDev)
	if err != nil {
		return false, err
	}
	p := planMove(srcOff, dstOff, n, srcSize, dstSize, align)
	if p.clone == 0 || p.clone < m.cfg.MinClone {
		return false, nil
	}
	// The head first, so the destination reaches the clone's start before the clone (no
	// post-EOF gap for the file system to zero).
	if err := m.copy(st, dst, dstOff, src, srcOff, p.head); err != nil {
		return true, err
	}
	mid := p.head
	err = m.clone(dst, dstOff+mid, src, srcOff+mid, p.clone)
	switch {
	case err == nil:
		m.setReflink(dir, CapabilitySupported)
		st.Cloned += p.clone
		st.Method = MethodReflink
	case errors.Is(err, ErrCloneUnsupported):
		m.setReflink(dir, CapabilityUnsupported)
		if err := m.copy(st, dst, dstOff+mid, src, srcOff+mid, p.clone); err != nil {
			return true, err
		}
	default:
		return true, err
	}
	tail := p.head + p.clone
	return true, m.copy(st, dst, dstOff+tail, src, srcOff+tail, p.tail)
}

// copy copies with CopyRange and accounts for it in st.
func (m *Mover) copy(st *Stats, dst *os.File, dstOff int64, src *os.File, srcOff, n int64) error {
	if n == 0 {
		return nil
	}
	method, err := CopyRange(dst, dstOff, src, srcOff, n)
	if err != nil {
		return err
	}
	st.Copied += n
	st.CopyMethod = method
	if st.Method != MethodReflink {
		st.Method = method
	}
	return nil
}

func (m *Mover) setReflink(dir string, c Capability) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// A concurrent success does not overrule a failure: once unsupported, always copy.
	if m.caps[dir] != CapabilityUnsupported {
		m.caps[dir] = c
	}
}

// alignment returns Config.Alignment or the cached block size of dev's file system.
func (m *Mover) alignment(f *os.File, dev uint64) (int64, error) {
	if m.cfg.Alignment > 0 {
		return m.cfg.Alignment, nil
	}
	m.mu.Lock()
	bs, ok := m.blocks[dev]
	m.mu.Unlock()
	if ok {
		return bs, nil
	}
	bs, err := fsBlockSize(f)
	if err != nil {
		return 0, err
	}
	m.mu.Lock()
	m.blocks[dev] = bs
	m.mu.Unlock()
	return bs, nil
}

// ProbeReflink finds out, before anything is written, whether files created in dir can
// share src's extents: it clones src's first block (or the whole of a smaller src) into a
// TempPrefix file in dir, removes it, and remembers the answer for dir. The error says why
// not, wrapping ErrCloneUnsupported when the file system or the file pair refuses; a
// directory already known to clone answers nil at once. A zero-length src proves nothing
// and answers nil.
func (m *Mover) ProbeReflink(dir string, src *os.File) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	switch m.Reflink(abs) {
	case CapabilitySupported:
		return nil
	case CapabilityUnsupported:
		return fmt.Errorf("%w: an earlier clone into %s failed", ErrCloneUnsupported, abs)
	}
	if !reflinkPlatform {
		return fmt.Errorf("%w: not on this platform", ErrCloneUnsupported)
	}
	srcDev, size, err := statDevSize(src)
	if err != nil {
		return err
	}
	if size == 0 {
		return nil
	}
	tmp, err := os.CreateTemp(abs, TempPrefix+"probe-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	dstDev, _, err := statDevSize(tmp)
	if err != nil {
		return err
	}
	if srcDev != dstDev {
		// Not a property of dir: do not remember it.
		return fmt.Errorf("%w: %s and %s are on different file systems", ErrCloneUnsupported, src.Name(), abs)
	}
	n := size
	if bs, err := m.alignment(tmp, dstDev); err == nil && bs > 0 && size > bs {
		n = bs
	}
	err = CloneRange(tmp, 0, src, 0, n)
	switch {
	case err == nil:
		m.setReflink(abs, CapabilitySupported)
	case errors.Is(err, ErrCloneUnsupported):
		m.setReflink(abs, CapabilityUnsupported)
	}
	return err
}
