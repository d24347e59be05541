package drill

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ProcessOptions configure [StartProcess]. Binary, Config and Data are
// required; zero fields of the others mean the defaults.
type ProcessOptions struct {
	// Binary is the toolhub executable; Config and Data are its `serve`
	// flags --config and --data.
	Binary, Config, Data string
	// Env is added to this process's environment; nil means the same.
	Env []string
	// Name says which process in errors; "" means "toolhub".
	Name string
	// Line, if set, is called with each line the process logs.
	Line func(line string)
}

// ErrNotStopped: a [Process] did not exit within the time [Process.Stop]
// gave it after SIGTERM (it was then killed).
var ErrNotStopped = errors.New("drill: process did not stop after SIGTERM")

// Process is one `toolhub serve` child process. It keeps its log (stderr)
// and learns from it the address it listens on.
type Process struct {
	name string
	cmd  *exec.Cmd
	addr chan string
	done chan struct{}
	err  error // the exit, once done is closed

	mu   sync.Mutex
	url  string
	logs bytes.Buffer
}

var listening = regexp.MustCompile(`"msg":"toolhub listening","addr":"([^"]+)"`)

// StartProcess starts `toolhub serve` and returns at once; see
// [Process.WaitListening]. Starting several before waiting for any starts
// them in parallel.
func StartProcess(o ProcessOptions) (*Process, error) {
	if o.Name == "" {
		o.Name = "toolhub"
	}
	cmd := exec.Command(o.Binary, "serve", "--config", o.Config, "--data", o.Data)
	if o.Env != nil {
		cmd.Env = append(os.Environ(), o.Env...)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s serve: %w", o.Binary, err)
	}
	p := &Process{name: o.Name, cmd: cmd, addr: make(chan string, 1), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.logs.WriteString(line + "\n")
			p.mu.Unlock()
			if o.Line != nil {
				o.Line(line)
			}
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case p.addr <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// WaitListening waits until the process logs the address it listens on,
// for d at most, and returns its base URL (also [Process.URL]).
func (p *Process) WaitListening(ctx context.Context, d time.Duration) (string, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case a := <-p.addr:
		p.mu.Lock()
		defer p.mu.Unlock()
		p.url = "http://" + a
		return p.url, nil
	case <-p.done:
		return "", fmt.Errorf("%s exited before listening: %v", p.name, p.err)
	case <-timer.C:
		return "", fmt.Errorf("%s did not listen within %v", p.name, d)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Name is [ProcessOptions].Name, or "toolhub".
func (p *Process) Name() string { return p.name }

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// URL is the process's base URL ("http://host:port"), once
// [Process.WaitListening] returned it.
func (p *Process) URL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.url
}

// VendorsReady reports whether every vendor named is ready, as the
// process's /v1/vendors says.
func (p *Process) VendorsReady(ctx context.Context, ids ...string) bool {
	var vs struct {
		Vendors []struct {
			ID    string `json:"id"`
			State string `json:"state"`
		} `json:"vendors"`
	}
	if getJSON(ctx, p.URL()+"/v1/vendors", &vs) != nil {
		return false
	}
	ready := map[string]bool{}
	for _, v := range vs.Vendors {
		if v.State == "ready" {
			ready[v.ID] = true
		}
	}
	for _, id := range ids {
		if !ready[id] {
			return false
		}
	}
	return true
}

// Signal sends sig to the process (SIGHUP: reload the config).
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Process) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Stop asks the process to shut down (SIGTERM) and waits for it, d at
// most; then it kills it and returns [ErrNotStopped]. An exit other than
// a clean one is an error too.
func (p *Process) Stop(d time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-p.done:
		if p.err != nil {
			return fmt.Errorf("%s exited with %v after SIGTERM", p.name, p.err)
		}
		return nil
	case <-timer.C:
		p.Kill()
		return fmt.Errorf("%s did not stop within %v of SIGTERM: %w", p.name, d, ErrNotStopped)
	}
}

// Logs returns every line the process logged so far.
func (p *Process) Logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// Tail returns the last n lines the process logged.
func (p *Process) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(p.Logs(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
