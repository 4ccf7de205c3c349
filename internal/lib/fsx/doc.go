// Package fsx owns sluice's file-system layer: moving byte ranges between files without
// copying them where the kernel allows it, streaming ranges between files and sockets, and
// publishing a set of files durably.
//
// Moving ranges (split, receive):
//   - CloneRange shares extents (FICLONERANGE, all or nothing; XFS with reflink, btrfs,
//     bcachefs, OCFS2 — not ext4, tmpfs or NFS).
//   - CopyRange copies exactly n bytes with copy_file_range, then sendfile, then a bounded
//     pread/pwrite loop, and says which did the work (Method).
//   - Mover combines them: per destination directory it tries a clone optimistically,
//     remembers a refusal (EOPNOTSUPP, ENOTTY, ENOSYS, EXDEV, EINVAL, EPERM) and copies from
//     then on. It clones the block-aligned middle of an unaligned request and copies the edges,
//     which works only when source and destination offsets are congruent modulo the block
//     size (FORMAT.md §6.3 "Reflink alignment"; sluice queries the block size per file system
//     where Cassandra's splitter assumes 64 KiB).
//
// Streaming (the TCP data plane): Sendfile sends a file range to a socket; SpliceToFile
// receives from a socket or pipe into a file at an offset through a pipe, with no user-space
// copy. Both wait on non-blocking descriptors through the Go runtime poller and take a context.
//
// Publishing: Install writes files under TempPrefix names, fsyncs them, renames them into
// place with the marker (TOC) last and fsyncs the directory; CleanLeftovers removes what a
// crash left. The crash-consistency argument is on Install.
//
// Measuring: EvictPageCache and ResidentBytes let a cold-cache benchmark drop and check a file's
// cached pages; FreeBytes and CheckFreeSpace check room before a write; ProcIO reads the
// process's I/O counters.
//
// Positions: CloneRange, copy_file_range, splice with offsets and pread/pwrite never move a file
// position. Only CopyRange's sendfile fallback writes at (and moves) the destination's position;
// see CopyRange.
//
// The Linux implementation uses golang.org/x/sys/unix wrappers (never hand-encoded ioctl
// numbers) in _linux.go files; mincore has no wrapper and is called as unix.SYS_MINCORE. The
// _other.go fallbacks keep the package building elsewhere: every copy is buffered and clones,
// page-cache control and statfs report errors.ErrUnsupported.
//
// fsx imports only the standard library and x/sys; it must not import any other sluice package.
package fsx
