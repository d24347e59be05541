package a2a

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/toolhub/toolhub/registry"
)

// minSecretLen is the shortest expanded value hidden from text: shorter
// values ("1", "us") would blank out ordinary words.
const minSecretLen = 4

// vendorHeaders are an A2A vendor's spec headers, ${VAR}s expanded (the
// values taken from the environment are secrets), sent only to the hosts
// of the card and of the agent interface in use, so that a redirect or an
// interface elsewhere does not carry them off.
type vendorHeaders struct {
	header  http.Header
	secrets []string // expanded values, longest first

	mu    sync.RWMutex
	hosts []string
}

// expandHeaders expands a spec's headers through lookup; nil when the
// spec has none. The error names the header and the variable, never a
// value.
func expandHeaders(spec *registry.A2ASpec, lookup func(string) (string, bool)) (*vendorHeaders, error) {
	if spec == nil || len(spec.Headers) == 0 {
		return nil, nil
	}
	h := &vendorHeaders{header: http.Header{}}
	for k, v := range spec.Headers {
		val, err := registry.ExpandEnv(v, func(name string) (string, bool) {
			if lookup == nil {
				return "", false
			}
			s, ok := lookup(name)
			if ok && len(s) >= minSecretLen {
				for _, form := range []string{s, url.QueryEscape(s), url.PathEscape(s)} {
					if !slices.Contains(h.secrets, form) {
						h.secrets = append(h.secrets, form)
					}
				}
			}
			return s, ok
		})
		if err != nil {
			return nil, fmt.Errorf("a2a: header %s: %w", k, err)
		}
		h.header.Set(k, val)
	}
	slices.SortFunc(h.secrets, func(a, b string) int { return len(b) - len(a) })
	if u, err := url.Parse(spec.Card); err == nil {
		h.hosts = []string{u.Host}
	}
	return h, nil
}

// allow adds the host of an interface URL the headers may go to.
func (h *vendorHeaders) allow(rawURL string) {
	if h == nil {
		return
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return
	}
	h.mu.Lock()
	if !slices.Contains(h.hosts, u.Host) {
		h.hosts = append(h.hosts, u.Host)
	}
	h.mu.Unlock()
}

func (h *vendorHeaders) allowed(host string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return slices.Contains(h.hosts, host)
}

// redact hides the secret values in s (an error message, a log line).
func (h *vendorHeaders) redact(s string) string {
	if h == nil {
		return s
	}
	for _, v := range h.secrets {
		s = strings.ReplaceAll(s, v, "[redacted]")
	}
	return s
}

// transport wraps base to add the headers.
func (h *vendorHeaders) transport(base http.RoundTripper) http.RoundTripper {
	return &headerTransport{h: h, base: base}
}

type headerTransport struct {
	h    *vendorHeaders
	base http.RoundTripper
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !t.h.allowed(r.URL.Host) {
		return t.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, vs := range t.h.header {
		r.Header[k] = slices.Clone(vs)
	}
	return t.base.RoundTrip(r)
}
