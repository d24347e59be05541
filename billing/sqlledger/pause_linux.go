package sqlledger

import (
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// pauser lets the Go scheduler poll the network between the INSERTs of a
// batch, on a process with one P (see yieldPause). The writer blocks on a
// timerfd through the runtime's network poller, so it runs again only
// after a poll of the network, which readies the calls whose bytes
// arrived with it. If nothing else is runnable, the poller sleeps until
// the timerfd fires, 20µs later; a time.Sleep would sleep 1ms there (the
// poller's resolution for timers).
type pauser struct {
	fd int
	f  *os.File // the same fd, pollable: reads park in the network poller
}

func newPauser() *pauser {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil
	}
	return &pauser{fd: fd, f: os.NewFile(uintptr(fd), "ledger pause timerfd")}
}

// pause returns after the network has been polled (or, if the timer
// fired before the writer blocked, at once).
func (p *pauser) pause() {
	if p == nil {
		runtime.Gosched()
		return
	}
	// Far enough ahead that the read below finds nothing and parks.
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(yieldPause))}
	if unix.TimerfdSettime(p.fd, 0, &spec, nil) != nil {
		runtime.Gosched()
		return
	}
	var expirations [8]byte
	p.f.Read(expirations[:])
	// The poll that woke the writer may have readied calls too: they go
	// first.
	runtime.Gosched()
}

func (p *pauser) close() {
	if p != nil {
		p.f.Close()
	}
}
