package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/registry"
)

// Entry is one audit record.
type Entry struct {
	At     time.Time       `json:"at"`
	Who    auth.Principal  `json:"who"`
	Action string          `json:"action"` // vendor.register, vendor.update, vendor.remove, vendor.rollback, vendor.pending, vendor.approve, vendor.reject, vendor.withdraw (a removed vendor's pending change), key.issue, key.rotate, key.revoke
	Target string          `json:"target"`
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`
}

// Log is an audit log. Entries are only ever appended.
type Log interface {
	// Append writes e durably (sanitized) before it returns.
	Append(ctx context.Context, e Entry) error
	// Recent returns the newest n entries, oldest first; n <= 0 means all.
	Recent(ctx context.Context, n int) ([]Entry, error)
	Close() error
}

// File is a [Log] in a JSON-lines file, one entry a line, fsynced per
// entry. Several Files (or processes) may append to one path.
type File struct {
	mu   sync.Mutex
	path string
}

var _ Log = (*File)(nil)

// NewFile returns the log at path; the file is created by the first Append.
func NewFile(path string) *File { return &File{path: path} }

func (l *File) Append(_ context.Context, e Entry) error {
	b, err := json.Marshal(Sanitize(e))
	if err != nil {
		return fmt.Errorf("audit: %v", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("audit: %v", err)
	}
	defer f.Close()
	// One write of the whole line: O_APPEND keeps lines whole across writers.
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("audit: %v", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("audit: %v", err)
	}
	return nil
}

func (l *File) Recent(_ context.Context, n int) ([]Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.Open(l.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit: %v", err)
	}
	defer f.Close()
	var out []Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e Entry
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
			if n > 0 && len(out) > 2*n {
				out = append(out[:0], out[len(out)-n:]...)
			}
		}
	}
	if n > 0 && len(out) > n {
		out = out[len(out)-n:]
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("audit: %v", err)
	}
	return out, nil
}

func (l *File) Close() error { return nil }

// Redacted replaces what [Sanitize] hides.
const Redacted = "[redacted]"

// secretName matches the names of fields, headers and environment
// variables whose values are secrets.
var secretName = regexp.MustCompile(`(?i)auth|passw|secret|token|api[-_]?key|cookie|credential|signature|private[-_]?key|session`)

// Sanitize returns e without secrets: toolhub tokens anywhere are
// redacted ([auth.Redact]), and in Before and After every value of a
// "headers" map (but those of [registry.SafeHeaders]) and of an "env"
// map, every string of a field whose name looks secret (Authorization,
// X-Api-Key, password, token, …), and the password and query values of
// a "url" or "card" are masked ([registry.MaskValue]): their literal text
// becomes [Redacted], their ${VAR} references stay, so "Bearer
// ${WEATHER_KEY}" is kept and "sk-123 ${X}" becomes "[redacted]${X}".
func Sanitize(e Entry) Entry {
	e.Target = auth.Redact(e.Target)
	e.Before, e.After = sanitizeJSON(e.Before), sanitizeJSON(e.After)
	return e
}

func sanitizeJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return json.RawMessage(`"` + Redacted + `: not JSON"`)
	}
	if !mask(v) && !strings.Contains(string(raw), "thk_") {
		return raw // nothing to hide: keep it byte for byte
	}
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`"` + Redacted + `"`)
	}
	return json.RawMessage(auth.Redact(string(b)))
}

// mask masks secret values in v in place and reports whether it did.
func mask(v any) bool {
	changed := false
	set := func(m map[string]any, k, was, now string) {
		if now != was {
			m[k] = now
			changed = true
		}
	}
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			switch x := e.(type) {
			case string:
				switch {
				case secretName.MatchString(k):
					set(t, k, x, registry.MaskValue(x))
				case strings.EqualFold(k, "url") || strings.EqualFold(k, "card"):
					set(t, k, x, registry.MaskURL(x))
				}
			case map[string]any:
				if strings.EqualFold(k, "headers") || strings.EqualFold(k, "env") {
					for hk, hv := range x {
						s, ok := hv.(string)
						if !ok || strings.EqualFold(k, "headers") && slices.ContainsFunc(registry.SafeHeaders, func(h string) bool { return strings.EqualFold(h, hk) }) {
							continue
						}
						set(x, hk, s, registry.MaskValue(s))
					}
					continue
				}
				changed = mask(x) || changed
			default:
				changed = mask(e) || changed
			}
		}
	case []any:
		for _, e := range t {
			changed = mask(e) || changed
		}
	}
	return changed
}
