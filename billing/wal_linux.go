package billing

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapSegment reserves the blocks of size bytes of f from off and maps them
// shared. The reservation comes first: a page fault on a block that the
// file system cannot allocate (disk full) is SIGBUS, which kills the
// process. (A copy-on-write file system may still need room at writeback:
// its fsync then fails, and the writer reports it.)
func mapSegment(f *os.File, off, size int64) ([]byte, error) {
	fd := int(f.Fd())
	if err := unix.Fallocate(fd, 0, off, size); err != nil {
		return nil, err
	}
	return unix.Mmap(fd, off, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

func unmapSegment(m []byte) error { return unix.Munmap(m) }

// populate makes the pages of b resident and writable without changing a
// byte (MADV_POPULATE_WRITE, Linux 5.14): appends then copy into pages
// that are there instead of taking a page fault every few calls. Older
// kernels refuse it; appends then fault as before.
func populate(b []byte) { _ = unix.Madvise(b, unix.MADV_POPULATE_WRITE) }
