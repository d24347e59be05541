package billing

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The spill and the write-ahead log share one on-disk form: a directory
// of numbered segments, each a sequence of framed lines
//
//	<crc32c of the JSON, 8 hex digits> <JSON of one event>\n
//
// A line whose checksum does not match (a torn write at a crash) is
// skipped and counted; zero bytes where a line starts (what an OS crash
// can leave past a file's last line) are skipped too. The WAL writes the
// compact JSON of appendWALLine, the spill the JSON of appendLine;
// decodeLine reads both.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// segments names the numbered segment files "<prefix><seq, 9 digits><suffix>"
// of one kind ("wal", "spill") in dir.
type segments struct {
	kind, dir, prefix, suffix string
}

func (s segments) name(seq int) string {
	return filepath.Join(s.dir, fmt.Sprintf("%s%09d%s", s.prefix, seq, s.suffix))
}

// list returns the segment numbers on disk, oldest first.
func (s segments) list() ([]int, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("billing: %s %s: %w", s.kind, s.dir, err)
	}
	var out []int
	for _, e := range ents {
		n, ok := strings.CutPrefix(e.Name(), s.prefix)
		n, ok2 := strings.CutSuffix(n, s.suffix)
		if !ok || !ok2 {
			continue
		}
		if seq, err := strconv.Atoi(n); err == nil {
			out = append(out, seq)
		}
	}
	slices.Sort(out)
	return out, nil
}

// remove deletes segment seq; one already gone is not an error.
func (s segments) remove(seq int) error {
	if err := os.Remove(s.name(seq)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("billing: %s: %w", s.kind, err)
	}
	return nil
}

// read calls fn with each event of segment seq, in order, and returns the
// number of lines skipped as corrupt. It stops at fn's first error.
func (s segments) read(seq int, fn func(Event) error) (corrupt int, err error) {
	f, err := os.Open(s.name(seq))
	if err != nil {
		return 0, fmt.Errorf("billing: %s: %w", s.kind, err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 256<<10)
	for {
		if err := skipZeros(r); err != nil {
			if errors.Is(err, io.EOF) {
				return corrupt, nil
			}
			return corrupt, fmt.Errorf("billing: %s: %w", s.kind, err)
		}
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			ev, ok := decodeLine(line)
			if !ok {
				corrupt++
			} else if ferr := fn(ev); ferr != nil {
				return corrupt, ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return corrupt, nil
		}
		if err != nil {
			return corrupt, fmt.Errorf("billing: %s: %w", s.kind, err)
		}
	}
}

// skipZeros discards the zero bytes r starts with.
func skipZeros(r *bufio.Reader) error {
	for {
		if _, err := r.Peek(1); err != nil {
			return err
		}
		b, _ := r.Peek(r.Buffered())
		n := len(b) - len(bytes.TrimLeft(b, "\x00"))
		r.Discard(n)
		if n < len(b) {
			return nil
		}
	}
}

// appendLine appends ev as one spill line: checksum, space, JSON,
// newline. The JSON is what encoding/json makes of an Event (same field
// names and value encodings), written by hand.
func appendLine(dst []byte, ev *Event) []byte {
	start := len(dst)
	dst = appendEventJSON(append(dst, "00000000 "...), ev)
	return frame(dst, start)
}

// frame completes the line that starts at start in dst: the JSON's
// checksum in place of the eight zeros the line starts with, and a
// newline. (The encoders are called directly, not through a function
// value: an event passed to one would escape, and Record would allocate
// it.)
func frame(dst []byte, start int) []byte {
	c := crc32.Checksum(dst[start+9:], castagnoli)
	hex.Encode(dst[start:start+8], []byte{byte(c >> 24), byte(c >> 16), byte(c >> 8), byte(c)})
	return append(dst, '\n')
}

// decodeLine reads one framed line, in either JSON form; false when its
// checksum does not match or its JSON is not an event.
func decodeLine(line []byte) (Event, bool) {
	var ev Event
	line = bytes.TrimSuffix(line, []byte("\n"))
	sum, body, ok := bytes.Cut(line, []byte(" "))
	if !ok || len(sum) != 8 {
		return ev, false
	}
	var want [4]byte
	if _, err := hex.Decode(want[:], sum); err != nil {
		return ev, false
	}
	if crc32.Checksum(body, castagnoli) != uint32(want[0])<<24|uint32(want[1])<<16|uint32(want[2])<<8|uint32(want[3]) {
		return ev, false
	}
	if bytes.HasPrefix(body, []byte(compactPrefix)) {
		return decodeCompact(body)
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return ev, false
	}
	return ev, true
}
