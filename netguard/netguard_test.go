package netguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCheckURL(t *testing.T) {
	p, err := New(Options{Allow: []string{"10.1.0.0/16", "127.0.0.1:9100"}, Deny: []string{"203.0.113.7"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		url, want string // want "" means allowed
	}{
		{"http://127.0.0.1/mcp", "loopback"},
		{"http://127.0.0.1:9100/mcp", ""}, // allowed host:port
		{"http://127.0.0.1:9101/mcp", "loopback"},
		{"http://169.254.169.254/latest/meta-data", "metadata"},
		{"http://[fd00:ec2::254]/", "metadata"},
		{"http://[::1]:8080/", "loopback"},
		{"http://localhost:8080/", "loopback"}, // a name that resolves to a private address
		{"http://10.0.0.5/", "private"},
		{"http://10.1.2.3/", ""}, // allowed CIDR
		{"http://192.168.1.1/", "private"},
		{"http://100.64.0.1/", "carrier-grade NAT"},
		{"http://0.0.0.0/", "unspecified"},
		{"http://203.0.113.7/", "deny list"},
		{"http://93.184.215.14/", ""},
		{"ftp://93.184.215.14/", "scheme"},
		{"http://[::ffff:127.0.0.1]/", "loopback"}, // IPv4-mapped
	}
	for _, tt := range tests {
		err := p.CheckURL(t.Context(), tt.url)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tt.url, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrRefused)):
			t.Errorf("%s: err = %v, want a refusal mentioning %q", tt.url, err, tt.want)
		}
	}
}

func TestClientChecksDialsAndRedirects(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("secret")) }))
	defer target.Close()
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, target.URL+"/", http.StatusFound)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer front.Close()
	p, err := New(Options{Allow: []string{front.Listener.Addr().String()}})
	if err != nil {
		t.Fatal(err)
	}
	c := p.Client(nil)
	resp, err := c.Get(front.URL + "/")
	if err != nil {
		t.Fatalf("allowed host:port: %v", err)
	}
	resp.Body.Close()
	if _, err := c.Get(front.URL + "/redirect"); err == nil || !errors.Is(err, ErrRefused) {
		t.Errorf("a redirect to a private address was followed: %v", err)
	}
	if _, err := c.Get(target.URL + "/"); err == nil || !errors.Is(err, ErrRefused) {
		t.Errorf("a direct dial to a refused address went through: %v", err)
	}
}

func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1/", "http://[::1]/", "http://0x7f.1/", "http://2130706433/", "http://a@127.0.0.1/"} {
		f.Add(s)
	}
	// No DNS while fuzzing: names fail to resolve at once.
	noDNS := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return nil, errors.New("no DNS in this test")
	}}
	p, _ := New(Options{Resolver: noDNS})
	f.Fuzz(func(t *testing.T, raw string) {
		err := p.CheckURL(t.Context(), raw)
		if err == nil && strings.Contains(raw, "127.0.0.1") && !strings.Contains(raw, "@") {
			// A URL naming loopback in its host must never pass.
			if u := raw; strings.HasPrefix(u, "http://127.0.0.1") || strings.HasPrefix(u, "https://127.0.0.1") {
				t.Fatalf("%q passed", raw)
			}
		}
	})
}
