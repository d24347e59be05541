package vendorconn

import "net/http"

// BaseTransport returns what a manager's vendor clients send through:
// base's Transport when it has one, or else a clone of
// http.DefaultTransport that keeps 64 idle connections per host, returned
// as own too, for the manager to close when it closes. base may be nil.
func BaseTransport(base *http.Client) (rt http.RoundTripper, own *http.Transport) {
	if base != nil && base.Transport != nil {
		return base.Transport, nil
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return t, t
}

// Client returns a client that sends through rt and follows base's
// redirect policy and cookie jar (none when base is nil). It has no
// Timeout: calls are bounded by their context, and streams live long.
func Client(base *http.Client, rt http.RoundTripper) *http.Client {
	c := &http.Client{Transport: rt}
	if base != nil {
		c.CheckRedirect, c.Jar = base.CheckRedirect, base.Jar
	}
	return c
}
