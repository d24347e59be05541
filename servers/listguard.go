package servers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// The bounds of a tools/list answer, enforced while it is read (before
// the answer is buffered or decoded), on every transport: the HTTP body of
// a streamable HTTP answer (JSON or an event stream), an answer on an SSE
// vendor's event stream, and a stdio vendor's line. A tool definition
// within the registry's bounds (registry.CheckToolDef) never comes near
// them: the longest field is a 256 KiB schema, and a vendor's catalog is
// at most registry.MaxVendorCatalogBytes.
const (
	// MaxToolsListString bounds one JSON string in a tools/list page.
	MaxToolsListString = 1 << 20
	// MaxToolsListPage bounds one tools/list page.
	MaxToolsListPage = 6 << 20
	// MaxToolsListBytes bounds the pages of one tool sync together.
	MaxToolsListBytes = 16 << 20
)

// ErrToolListTooLarge is the cause of a tool sync stopped while reading a
// tools/list answer over a bound.
var ErrToolListTooLarge = errors.New("servers: tools/list answer over a bound")

// listRefusedCode is the JSON-RPC error code of the answer the hub puts in
// place of a tools/list answer it stopped reading on a stream (stdio, an
// SSE vendor's event stream), so that the request fails at once with the
// reason instead of waiting for its deadline.
const listRefusedCode = -32099

// listIDs is the set of a connection's tools/list requests in flight, by
// their JSON id; a stream guard holds the answers to these to the
// tools/list bounds.
type listIDs struct {
	mu  sync.Mutex
	ids map[string]int64 // JSON id → bytes the sync may still read
}

func (l *listIDs) add(id any, budget int64) string {
	b, _ := json.Marshal(id)
	k := string(b)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ids == nil {
		l.ids = map[string]int64{}
	}
	l.ids[k] = budget
	return k
}

func (l *listIDs) remove(k string) {
	l.mu.Lock()
	delete(l.ids, k)
	l.mu.Unlock()
}

// any reports whether a tools/list is in flight.
func (l *listIDs) any() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ids) > 0
}

func (l *listIDs) budget(rawID []byte) (int64, bool) {
	if l == nil {
		return 0, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.ids[string(bytes.TrimSpace(rawID))]
	return b, ok
}

// listScan follows the JSON of a tools/list answer a byte at a time,
// keeping no more of it than a few bytes of state: it fails once one
// string or the answer is over its bound. In stream mode (one line of
// stdio or of an event stream, each a message; reset between lines) it
// also reads the message's top-level id and holds only answers to listIDs
// to the bounds, and a result that comes before its id while a tools/list
// is in flight.
type listScan struct {
	stream bool
	lists  *listIDs

	active bool  // the bounds hold for this answer
	limit  int64 // bytes of the answer allowed
	n      int64 // bytes of the answer (line) read

	inStr, esc bool
	strLen     int64
	depth      int
	wantKey    bool // at depth 1, the next string is a key
	inKey      bool
	key        [7]byte
	keyLen     int
	keyIsID    bool
	keyIsRes   bool
	idSeen     bool
	done       bool // a bound failed: scan on only to find the id
	capID      bool
	id         []byte
}

func newBodyScan(limit int64) *listScan {
	return &listScan{active: true, limit: min(limit, MaxToolsListPage)}
}

func newStreamScan(lists *listIDs) *listScan { return &listScan{stream: true, lists: lists} }

// reset starts a new line.
func (s *listScan) reset() {
	lists, stream := s.lists, s.stream
	id := s.id[:0]
	*s = listScan{stream: stream, lists: lists, id: id}
}

// feed scans b and returns how many of its bytes it took before a bound
// failed (with the error), or len(b) and nil. After a failure the scan is
// done: fed the rest of the line, it only looks for the message's id.
func (s *listScan) feed(b []byte) (int, error) {
	for i, c := range b {
		s.n++
		if s.active && s.n > s.limit {
			s.active, s.done = false, true
			return i, s.overPage()
		}
		if s.inStr {
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.inStr = false
				if s.inKey {
					s.inKey = false
					k := string(s.key[:s.keyLen])
					s.keyIsID, s.keyIsRes = k == "id", k == "result"
				}
				if s.capID && len(s.id) < 64 {
					s.id = append(s.id, c)
				}
				continue
			}
			s.strLen++
			if s.active && s.strLen > MaxToolsListString {
				s.active, s.done = false, true
				return i + 1, fmt.Errorf("%w: a string of more than %d bytes, over the %d-byte limit of any string in a tools/list page (the longest tool field is a 256 KiB schema)",
					ErrToolListTooLarge, MaxToolsListString, MaxToolsListString)
			}
			if s.inKey && s.keyLen < len(s.key) {
				s.key[s.keyLen] = c
				s.keyLen++
			}
			if s.capID && len(s.id) < 64 {
				s.id = append(s.id, c)
			}
			continue
		}
		if !s.stream {
			if c == '"' {
				s.inStr, s.strLen = true, 0
			}
			continue
		}
		switch c {
		case '"':
			s.inStr, s.strLen = true, 0
			if s.depth == 1 && s.wantKey {
				s.inKey, s.keyLen, s.wantKey = true, 0, false
			}
		case '{', '[':
			s.depth++
			s.wantKey = s.depth == 1 && c == '{'
		case '}', ']':
			if s.depth == 1 && s.capID {
				s.endID()
			}
			s.depth--
		case ':':
			if s.depth == 1 && s.keyIsID {
				s.keyIsID, s.capID, s.id = false, true, s.id[:0]
				continue
			}
			if s.depth == 1 && s.keyIsRes {
				// A result before its id, while a tools/list is in
				// flight: held to the bounds too (SDKs write the id
				// first; a vendor that does not must not slip past).
				s.keyIsRes = false
				if !s.idSeen && !s.active && !s.done && s.lists.any() {
					s.active, s.limit = true, MaxToolsListPage
				}
			}
		case ',':
			if s.depth == 1 {
				if s.capID {
					s.endID()
				}
				s.wantKey = true
			}
		}
		if s.capID && len(s.id) < 64 {
			s.id = append(s.id, c)
		}
	}
	return len(b), nil
}

// endID ends the top-level id: an answer to a tools/list in flight is held
// to the bounds from here on (the bytes of the line so far count).
func (s *listScan) endID() {
	s.capID, s.idSeen = false, true
	if budget, ok := s.lists.budget(s.id); ok && !s.active && !s.done {
		s.active, s.limit = true, min(budget, MaxToolsListPage)
	}
}

func (s *listScan) overPage() error {
	if s.limit < MaxToolsListPage {
		return fmt.Errorf("%w: the tool sync's answers are over %d bytes together", ErrToolListTooLarge, MaxToolsListBytes)
	}
	return fmt.Errorf("%w: a page over the %d-byte limit", ErrToolListTooLarge, MaxToolsListPage)
}

// refusedLine is the message a stream guard puts in place of an answer it
// stopped reading: a JSON-RPC error for the same id, on one line (prefix
// is "data: " on an event stream).
func refusedLine(prefix string, id []byte, err error) []byte {
	msg, _ := json.Marshal(err.Error())
	return fmt.Appendf(nil, "%s{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,\"message\":%s}}\n", prefix, bytes.TrimSpace(id), listRefusedCode, msg)
}
