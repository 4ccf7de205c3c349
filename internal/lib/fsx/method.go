package fsx

// Method names the mechanism that moved bytes.
type Method uint8

// Methods from the cheapest to the most expensive. A copy falls back down this list.
const (
	MethodNone          Method = iota // nothing was moved (a zero-length request)
	MethodReflink                     // FICLONERANGE: extents shared, no data written
	MethodCopyFileRange               // copy_file_range(2): in-kernel copy
	MethodSendfile                    // sendfile(2): in-kernel copy through the page cache
	MethodBuffered                    // pread/pwrite through a bounded user-space buffer
)

func (m Method) String() string {
	switch m {
	case MethodNone:
		return "none"
	case MethodReflink:
		return "reflink"
	case MethodCopyFileRange:
		return "copy_file_range"
	case MethodSendfile:
		return "sendfile"
	case MethodBuffered:
		return "buffered"
	}
	return "unknown"
}

// Stats reports what one Move did. Cloned + Copied equals the requested length on success.
type Stats struct {
	Cloned int64 // bytes whose extents are now shared with the source
	Copied int64 // bytes written by a copy mechanism
	// Method is MethodReflink when any byte was cloned, otherwise CopyMethod.
	Method Method
	// CopyMethod is the last mechanism that copied bytes (the edges of a clone, or everything);
	// MethodNone when nothing was copied.
	CopyMethod Method
}
