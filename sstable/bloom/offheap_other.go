//go:build !linux

package bloom

// mapWords has no mapping outside the heap on this platform: NewOffHeap falls back to it.
func mapWords(int) ([]uint64, func(), bool) { return nil, nil, false }
