package fsx

// CheckFreeSpace returns a *NoSpaceError (wrapping ErrNoSpace) naming dir when its file system
// has fewer than need bytes available (FreeBytes). It is a pre-flight check: the space may
// still run out later, so writers must handle ENOSPC anyway.
func CheckFreeSpace(dir string, need int64) error {
	free, err := FreeBytes(dir)
	if err != nil {
		return err
	}
	if free < need {
		return &NoSpaceError{Dir: dir, Need: need, Free: free}
	}
	return nil
}
