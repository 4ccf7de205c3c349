package bloom

import "runtime"

// offHeapMin is the smallest filter NewOffHeap maps outside the heap; smaller ones are not
// worth a mapping.
const offHeapMin = 1 << 20

// NewOffHeap is New with the words outside the Go heap where the platform allows (an anonymous
// mapping) once the filter reaches a MiB. A big child's filter (~1.2 bytes per partition) is
// most of what a rebuild keeps live, and the collector lets the heap grow to about twice what
// is live: on the heap, the filter would cost twice its size in peak memory. Free releases the
// mapping as soon as the filter has been written; one never freed is released when the Filter
// is collected.
func NewOffHeap(numElements int64, fpChance float64) (*Filter, error) {
	k, words, err := shape(numElements, fpChance)
	if err != nil {
		return nil, err
	}
	if words*8 < offHeapMin {
		return NewSized(k, words), nil
	}
	f := NewSized(k, 1) // validates k; the words are replaced
	w, release, ok := mapWords(words)
	if !ok {
		return NewSized(k, words), nil
	}
	f.Words, f.release, f.words = w, release, newReducer(uint64(words))
	runtime.SetFinalizer(f, (*Filter).Free)
	return f, nil
}

// Free releases the words of a filter from NewOffHeap; the filter must not be used after.
// It does nothing for a filter on the heap.
func (f *Filter) Free() {
	if f.release != nil {
		f.Words = nil
		f.release()
		f.release = nil
		runtime.SetFinalizer(f, nil)
	}
}
