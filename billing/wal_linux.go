package billing

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapSegment reserves the blocks of f's first size bytes and maps them
// shared. The reservation comes first: a page fault on a block that the
// file system cannot allocate (disk full) is SIGBUS, which kills the
// process. (A copy-on-write file system may still need room at writeback:
// its fsync then fails, and the writer reports it.)
func mapSegment(f *os.File, size int64) ([]byte, error) {
	fd := int(f.Fd())
	if err := unix.Fallocate(fd, 0, 0, size); err != nil {
		f.Truncate(0)
		return nil, err
	}
	m, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		f.Truncate(0)
		return nil, err
	}
	return m, nil
}

func unmapSegment(m []byte) error { return unix.Munmap(m) }
