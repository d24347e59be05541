package vendorconn

import (
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/toolhub/toolhub/registry"
)

// MinSecretLen is the shortest expanded value a [Redactor] hides: shorter
// values ("1", "us") would blank out ordinary words.
const MinSecretLen = 4

// Redactor hides the values a vendor's spec took from the environment
// (its ${VAR}s) wherever toolhub shows text: status, logs, error
// messages. The spec says "${TOKEN}"; its value must never appear. The
// zero Redactor hides nothing yet; a nil one hides nothing.
type Redactor struct {
	mu      sync.RWMutex
	secrets []string // longest first
	rep     *strings.Replacer
}

// Add remembers a secret value, with its URL-escaped forms.
func (r *Redactor) Add(v string) {
	if r == nil || len(v) < MinSecretLen {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range []string{v, url.QueryEscape(v), url.PathEscape(v)} {
		if !slices.Contains(r.secrets, s) {
			r.secrets = append(r.secrets, s)
		}
	}
	slices.SortFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(r.secrets))
	for _, s := range r.secrets {
		pairs = append(pairs, s, "[redacted]")
	}
	r.rep = strings.NewReplacer(pairs...)
}

// Redact returns s with every secret replaced by "[redacted]".
func (r *Redactor) Redact(s string) string {
	if r == nil {
		return s
	}
	r.mu.RLock()
	rep := r.rep
	r.mu.RUnlock()
	if rep == nil {
		return s
	}
	return rep.Replace(s)
}

// Expand expands ${VAR} references in s through lookup, remembering every
// value it substitutes as a secret. A nil lookup knows no variables; the
// error names the variable, never a value.
func (r *Redactor) Expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	return registry.ExpandEnv(s, func(name string) (string, bool) {
		if lookup == nil {
			return "", false
		}
		v, ok := lookup(name)
		if ok {
			r.Add(v)
		}
		return v, ok
	})
}
