//go:build !linux

package sqlledger

import "time"

// pauser lets the Go scheduler poll the network between the INSERTs of a
// batch, on a process with one P (see yieldPause): a sleep leaves the run
// queue empty for the poller.
type pauser struct{}

func newPauser() *pauser { return &pauser{} }

func (*pauser) pause() { time.Sleep(yieldPause) }

func (*pauser) close() {}
