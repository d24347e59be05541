package a2a

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"

	"github.com/toolhub/toolhub/hub/vendorconn"
	"github.com/toolhub/toolhub/registry"
)

// vendorHeaders are an A2A vendor's spec headers, ${VAR}s expanded (the
// values taken from the environment are secrets), sent only to the hosts
// of the card and of the agent interface in use, so that a redirect or an
// interface elsewhere does not carry them off.
type vendorHeaders struct {
	header http.Header
	red    vendorconn.Redactor // the expanded values

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
		val, err := h.red.Expand(v, lookup)
		if err != nil {
			return nil, fmt.Errorf("a2a: header %s: %w", k, err)
		}
		h.header.Set(k, val)
	}
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
	return h.red.Redact(s)
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
