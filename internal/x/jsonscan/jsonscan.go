// Package jsonscan reads JSON without reflection, for the envelopes the
// fast path decodes on every call (servers, api): it validates a document
// in one pass, accepting exactly what encoding/json accepts, and walks an
// object's members or an array's elements as spans of the input.
//
// It decodes nothing itself. Callers take the members they know and leave
// anything unusual (an escaped key, a key encoding/json would match to a
// field without regard to case, a value of an unexpected type) to
// encoding/json, so that what they decode is what encoding/json decodes.
package jsonscan

import (
	"bytes"
	"unicode/utf8"
)

// maxDepth is encoding/json's limit on nesting: deeper documents are
// invalid there, and so here.
const maxDepth = 10000

// Valid reports whether b is one JSON value, with optional whitespace
// around it, as json.Valid does.
func Valid(b []byte) bool {
	i := value(b, skipSpace(b, 0), 0)
	return i >= 0 && skipSpace(b, i) == len(b)
}

// Object calls fn with each member of the JSON object b, in order: the
// key as written between its quotes (escapes left as they are) and the
// value's bytes, without the whitespace around them. It reports whether b
// is one valid JSON object (whitespace around it allowed) and fn returned
// true for every member; when it reports false, fn may have seen some
// members of an object that turns out to be invalid.
func Object(b []byte, fn func(key, value []byte) bool) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		k := str(b, i)
		if k < 0 {
			return false
		}
		key := b[i+1 : k-1]
		i = skipSpace(b, k)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		j := value(b, i, 1)
		if j < 0 || !fn(key, b[i:j]) {
			return false
		}
		i = skipSpace(b, j)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case '}':
			return skipSpace(b, i+1) == len(b)
		case ',':
			i = skipSpace(b, i+1)
		default:
			return false
		}
	}
}

// Array calls fn with each element of the JSON array b, in order, as
// Object does with an object's members.
func Array(b []byte, fn func(elem []byte) bool) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		j := value(b, i, 1)
		if j < 0 || !fn(b[i:j]) {
			return false
		}
		i = skipSpace(b, j)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ']':
			return skipSpace(b, i+1) == len(b)
		case ',':
			i = skipSpace(b, i+1)
		default:
			return false
		}
	}
}

// Fields walks the JSON object b as encoding/json walks it into a struct
// whose fields are named names: it calls fn with the index in names of
// each member whose key is one of them, and the member's value; other
// members are skipped, as encoding/json skips them. It reports false, for
// the caller to leave b to encoding/json, when b is not a valid object,
// when fn returns false, when a name comes twice (encoding/json would
// decode into the field again), or when a key is not [Plain]. names holds
// at most 64 names.
func Fields(b []byte, names []string, fn func(field int, value []byte) bool) bool {
	var seen uint64
	return Object(b, func(key, v []byte) bool {
		for i, n := range names {
			if string(key) == n {
				if seen&(1<<i) != 0 {
					return false
				}
				seen |= 1 << i
				return fn(i, v)
			}
		}
		return Plain(key, names...)
	})
}

// Bool returns the JSON boolean v.
func Bool(v []byte) (value, ok bool) {
	switch string(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// String returns the contents of v, a valid JSON string with its quotes,
// when they are what encoding/json decodes it to: no escapes and valid
// UTF-8 (encoding/json turns invalid UTF-8 into U+FFFD). The bytes are
// v's own.
func String(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' {
		return nil, false
	}
	s := v[1 : len(v)-1]
	if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) {
		return nil, false
	}
	return s, true
}

// Plain reports whether key, a member's key as Object gives it, can match
// none of names in encoding/json but by being equal to one: it has no
// escapes and no bytes outside ASCII, and no name equals it but for case.
// encoding/json matches a key to a field without regard to case (with
// Unicode folding), so a caller that meets a key that is not Plain leaves
// the document to encoding/json.
func Plain(key []byte, names ...string) bool {
	for _, c := range key {
		if c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	for _, n := range names {
		if len(n) == len(key) && string(key) != n && bytes.EqualFold(key, []byte(n)) {
			return false
		}
	}
	return true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// value returns the end of the JSON value starting at b[i], or -1 when
// there is none. depth is how many containers hold it.
func value(b []byte, i, depth int) int {
	var inline [32]byte
	stack := inline[:0] // the open containers: '{' or '['
	for {
		// A value starts at i.
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; c {
		case '{', '[':
			if depth+len(stack)+1 > maxDepth {
				return -1
			}
			end := byte('}')
			if c == '[' {
				end = ']'
			}
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == end {
				i++
				break
			}
			stack = append(stack, c)
			if c == '{' {
				if i = member(b, i); i < 0 {
					return -1
				}
			}
			continue
		case '"':
			i = str(b, i)
		case 't':
			i = literal(b, i, "true")
		case 'f':
			i = literal(b, i, "false")
		case 'n':
			i = literal(b, i, "null")
		default:
			i = number(b, i)
		}
		// A value ended at i: close what it ends, or go on to the next.
		for {
			if i < 0 {
				return -1
			}
			if len(stack) == 0 {
				return i
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return -1
			}
			open := stack[len(stack)-1]
			if b[i] == ',' {
				i = skipSpace(b, i+1)
				if open == '{' {
					i = member(b, i)
				}
				break
			}
			if open == '{' && b[i] == '}' || open == '[' && b[i] == ']' {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			return -1
		}
		if i < 0 {
			return -1
		}
	}
}

// member reads an object member's key and colon at b[i] and returns where
// its value starts, or -1.
func member(b []byte, i int) int {
	if i = str(b, i); i < 0 {
		return -1
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return skipSpace(b, i+1)
}

// str returns the end of the JSON string starting at b[i], or -1.
func str(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	for i++; i < len(b); i++ {
		c := b[i]
		if plainByte[c] {
			continue
		}
		switch {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			i++
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return -1
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return -1
					}
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

// plainByte marks the bytes a string holds as they are: all but the
// quote, the backslash and control characters.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func literal(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// number returns the end of the JSON number starting at b[i], or -1:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func number(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}
