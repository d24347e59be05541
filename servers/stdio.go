package servers

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/toolhub/toolhub/hub/vendorconn"
)

// stopGrace is how long a stdio vendor has to exit after its stdin closes
// before it is killed.
const stopGrace = 2 * time.Second

// proc is a stdio vendor's process. The manager spawns it with its own
// pipes (not through mcp-go's Stdio transport, which owns cmd.Wait and has
// no hook for an exiting child) and hands the pipes to transport.NewIO. It
// waits for the process itself, so it learns at once when the process
// dies, and it can kill the process group on shutdown.
type proc struct {
	cmd    *exec.Cmd
	stdin  *os.File // our end: write
	stdout *os.File // our end: read
	stderr *os.File // our end: read
	exited chan struct{}
	err    error // the exit status; read after exited is closed

	tailMu  sync.Mutex
	tail    []string      // last lines of stderr
	drained chan struct{} // closed when stderr reached its end
}

// startProc starts a stdio vendor.
func startProc(command string, args, env []string, dir string, log *slog.Logger, red *vendorconn.Redactor, maxLine int, lists *listIDs) (*proc, transport.Interface, error) {
	path, err := exec.LookPath(command)
	if err != nil {
		return nil, nil, fmt.Errorf("command %q: %w", command, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Dir = dir
	setProcAttr(cmd)

	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	pipe := func() (r, w *os.File) {
		if err != nil {
			return nil, nil
		}
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w
	}
	inR, inW := pipe()
	outR, outW := pipe()
	errR, errW := pipe()
	if err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("pipes: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("start %q: %w", command, err)
	}
	// The child holds its ends now.
	_ = inR.Close()
	_ = outW.Close()
	_ = errW.Close()

	p := &proc{cmd: cmd, stdin: inW, stdout: outR, stderr: errR, exited: make(chan struct{}), drained: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	go p.drainStderr(log, red)

	if maxLine <= 0 {
		maxLine = int(^uint(0) >> 1)
	}
	out := &lineLimiter{r: bufio.NewReaderSize(outR, 64<<10), max: maxLine, log: log, scan: newStreamScan(lists)}
	return p, transport.NewIO(out, inW, nil), nil
}

// stderrGrace is how long [proc.exitError] waits for an exited process's
// stderr to be read to its end.
const stderrGrace = 200 * time.Millisecond

// pid returns the process id.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// exitError describes how the process ended, with the last stderr line.
// The process may have exited before its last words were read: it waits a
// moment for stderr to end (a grandchild holding the pipe open may keep it
// from ending at all).
func (p *proc) exitError() error {
	select {
	case <-p.exited:
		t := time.NewTimer(stderrGrace)
		select {
		case <-p.drained:
		case <-t.C:
		}
		t.Stop()
	default:
	}
	err := p.err
	if err == nil {
		err = errors.New("exited")
	}
	p.tailMu.Lock()
	defer p.tailMu.Unlock()
	if n := len(p.tail); n > 0 {
		return fmt.Errorf("process %d %w; stderr: %s", p.pid(), err, p.tail[n-1])
	}
	return fmt.Errorf("process %d %w", p.pid(), err)
}

// stop closes stdin, gives the process stopGrace to exit, then kills its
// process group, and releases the pipes.
func (p *proc) stop() {
	_ = p.stdin.Close()
	t := time.NewTimer(stopGrace)
	select {
	case <-p.exited:
	case <-t.C:
		killGroup(p.cmd)
		<-p.exited
	}
	t.Stop()
	// Whatever it started goes with it; a grandchild could otherwise hold
	// the pipes open. Closing our ends unblocks the transport's reader.
	killGroup(p.cmd)
	_ = p.stdout.Close()
	_ = p.stderr.Close()
}

// drainStderr keeps the child's stderr flowing (a full pipe would block
// it), logs each line at debug level and keeps the last few for errors.
func (p *proc) drainStderr(log *slog.Logger, red *vendorconn.Redactor) {
	defer close(p.drained)
	sc := bufio.NewScanner(p.stderr)
	sc.Buffer(make([]byte, 4096), 64<<10)
	for sc.Scan() {
		line := red.Redact(strings.TrimSpace(sc.Text()))
		if line == "" {
			continue
		}
		if len(line) > 512 {
			line = line[:512] + "…"
		}
		log.Debug("vendor stderr", "line", line)
		p.tailMu.Lock()
		p.tail = append(p.tail, line)
		if len(p.tail) > 8 {
			p.tail = p.tail[1:]
		}
		p.tailMu.Unlock()
	}
	// A line over the scanner's limit ends the scan: keep draining.
	_, _ = io.Copy(io.Discard, p.stderr)
}

// lineLimiter passes stdout through line by line, dropping any line longer
// than max: mcp-go's stdio transport reads whole lines into memory, so one
// runaway line could take all of toolhub's. The request it answered then
// ends at its deadline. An answer to a tools/list in flight (scan) is held
// to the tools/list bounds as it is read: past one, the rest of its line
// is read and dropped, and an error answer for its id takes its place.
// It also guards an SSE vendor's event stream (prefix "data: ").
type lineLimiter struct {
	r      *bufio.Reader
	max    int
	log    *slog.Logger
	scan   *listScan
	prefix string // of the refused answer's line
	buf    bytes.Buffer
	err    error
}

func (l *lineLimiter) Read(p []byte) (int, error) {
	for l.buf.Len() == 0 {
		if l.err != nil {
			return 0, l.err
		}
		l.fill()
	}
	return l.buf.Read(p)
}

// fill reads one line (or fails).
func (l *lineLimiter) fill() {
	n := 0
	var (
		refused error
		id      []byte
	)
	if l.scan != nil {
		l.scan.reset()
	}
	for {
		chunk, err := l.r.ReadSlice('\n')
		n += len(chunk)
		switch {
		case l.scan == nil:
		case refused == nil:
			if k, serr := l.scan.feed(chunk); serr != nil {
				refused = serr
				l.buf.Reset()
				_, _ = l.scan.feed(chunk[k:]) // on to the id, if it comes after
			}
		default:
			_, _ = l.scan.feed(chunk)
		}
		if n <= l.max && refused == nil {
			l.buf.Write(chunk)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err != nil:
			l.err = err
			if n > l.max || refused != nil {
				l.buf.Reset()
			}
			return
		}
		if refused != nil {
			id = bytes.TrimSpace(l.scan.id)
		}
		switch {
		case refused != nil && len(id) == 0:
			l.buf.Reset()
			l.log.Warn("dropped an answer with no id over a tools/list bound", "bytes", n, "error", refused)
		case refused != nil:
			l.buf.Reset()
			l.buf.Write(refusedLine(l.prefix, id, refused))
			l.log.Warn("stopped reading a tools/list answer over a bound", "id", string(id), "bytes", n, "error", refused)
		case n > l.max:
			l.buf.Reset()
			l.log.Warn("dropped an oversized message from a stdio vendor; the request it answered will time out",
				"bytes", n, "limit", l.max)
		}
		return
	}
}

// listStream guards an SSE vendor's event stream (recordingTransport
// finds it in the context of the stream's GET).
type listStream struct {
	lists *listIDs
	max   int
	log   *slog.Logger
}

type listStreamKey struct{}

func (s *listStream) wrap(rc io.ReadCloser) io.ReadCloser {
	return &struct {
		io.Reader
		io.Closer
	}{&lineLimiter{r: bufio.NewReaderSize(rc, 64<<10), max: s.max, log: s.log, scan: newStreamScan(s.lists), prefix: "data: "}, rc}
}
