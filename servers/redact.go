package servers

import (
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/toolhub/toolhub/registry"
)

// minSecretLen is the shortest expanded value the redactor hides: shorter
// values ("1", "us") would blank out ordinary words.
const minSecretLen = 4

// redactor hides the values taken from the environment (through
// Options.LookupEnv) wherever the manager shows text: status, logs, error
// messages. The spec says "${TOKEN}"; its value must never appear.
type redactor struct {
	mu      sync.RWMutex
	secrets []string // longest first
	rep     *strings.Replacer
}

// add remembers a secret value, with its URL-escaped forms.
func (r *redactor) add(v string) {
	if r == nil || len(v) < minSecretLen {
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

func (r *redactor) redact(s string) string {
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

// expand expands ${VAR} references in s through lookup, remembering every
// value it substitutes as a secret. A nil lookup knows no variables.
func (r *redactor) expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	return registry.ExpandEnv(s, func(name string) (string, bool) {
		if lookup == nil {
			return "", false
		}
		v, ok := lookup(name)
		if ok {
			r.add(v)
		}
		return v, ok
	})
}
