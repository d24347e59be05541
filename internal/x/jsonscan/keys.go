package jsonscan

import (
	"bytes"
	"encoding/json"
	"unicode"
	"unicode/utf8"
)

// RepeatedKey reports the first member of any object in the JSON value b
// whose key repeats an earlier key of the same object, or equals one but
// for case as encoding/json folds case (after escapes are decoded, so
// "a" and "\u0061" are the same key). A repeat is reported where it is
// met, whether the rest of b is valid or not; ok is false, with no key,
// when every object's keys are distinct or b is invalid before a repeat.
//
// Such a document reads differently to different readers: encoding/json
// decodes the last of two equal keys, and into a struct field the last of
// any keys equal but for case; a reader that picks keys by exact name, or
// takes the first, sees another value. What a hub validates and what it
// sends are the same only when no reader can choose.
func RepeatedKey(b []byte) (key string, ok bool) {
	s := keyScan{b: b}
	i := skipSpace(b, 0)
	if s.value(i, 0) < 0 && s.found {
		return s.key, true
	}
	return "", false
}

// keyScan walks a document once, keeping the keys of the objects it is
// in on one stack.
type keyScan struct {
	b     []byte
	keys  [][]byte // the keys of the open objects, innermost last
	key   string   // the repeated key
	found bool
}

// value returns the end of the value at b[i], or -1 (found says whether
// for a repeated key).
func (s *keyScan) value(i, depth int) int {
	b := s.b
	if i >= len(b) || depth >= maxDepth {
		return -1
	}
	switch b[i] {
	case '{':
		return s.object(i, depth+1)
	case '[':
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1
		}
		for {
			if i = s.value(i, depth+1); i < 0 {
				return -1
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case ']':
				return i + 1
			case ',':
				i = skipSpace(b, i+1)
			default:
				return -1
			}
		}
	}
	return value(b, i, depth)
}

// smallObject is how many keys an object may have before its keys are
// compared through a map instead of each with each.
const smallObject = 16

func (s *keyScan) object(i, depth int) int {
	b := s.b
	base := len(s.keys)
	defer func() { s.keys = s.keys[:base] }()
	var folded map[string]struct{} // past smallObject keys
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		k := str(b, i)
		if k < 0 {
			return -1
		}
		key := b[i+1 : k-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var u string
			if json.Unmarshal(b[i:k], &u) != nil {
				return -1
			}
			key = []byte(u)
		}
		if folded == nil {
			for _, prev := range s.keys[base:] {
				if bytes.EqualFold(prev, key) {
					s.key, s.found = string(key), true
					return -1
				}
			}
			s.keys = append(s.keys, key)
			if len(s.keys)-base > smallObject {
				folded = make(map[string]struct{}, 2*smallObject)
				for _, prev := range s.keys[base:] {
					folded[string(fold(prev))] = struct{}{}
				}
			}
		} else {
			f := string(fold(key))
			if _, dup := folded[f]; dup {
				s.key, s.found = string(key), true
				return -1
			}
			folded[f] = struct{}{}
		}
		i = skipSpace(b, k)
		if i >= len(b) || b[i] != ':' {
			return -1
		}
		if i = s.value(skipSpace(b, i+1), depth); i < 0 {
			return -1
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case '}':
			return i + 1
		case ',':
			i = skipSpace(b, i+1)
		default:
			return -1
		}
	}
}

// fold folds a key's case as encoding/json does when it matches a key to
// a struct field (foldName there): fold(x) == fold(y) exactly when
// bytes.EqualFold(x, y).
func fold(key []byte) []byte {
	out := make([]byte, 0, len(key))
	for len(key) > 0 {
		c := key[0]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			key = key[1:]
			continue
		}
		r, n := utf8.DecodeRune(key)
		out = utf8.AppendRune(out, foldRune(r))
		key = key[n:]
	}
	return out
}

// foldRune is the smallest rune of r's case-folding orbit.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}
