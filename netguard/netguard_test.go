package netguard

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// sandboxed is a policy of o whose traffic a Sandbox keeps on loopback.
// At the end of the test nothing may have been dialled off loopback, nor a
// DNS query sent: a test asserts on what the policy refused, and a
// regression of the policy shows here instead of leaving the machine.
func sandboxed(t testing.TB, o Options) (*Policy, *Sandbox) {
	t.Helper()
	sb := &Sandbox{}
	o.Sandbox = sb
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if r := sb.Refused(); len(r) > 0 {
			t.Errorf("the policy let traffic through that the sandbox stopped: %v", r)
		}
	})
	return p, sb
}

func TestCheckURL(t *testing.T) {
	p, sb := sandboxed(t, Options{Allow: []string{"10.1.0.0/16", "127.0.0.1:9100"}, Deny: []string{"203.0.113.7"}})
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
	if d := sb.Dials(); len(d) > 0 {
		t.Errorf("CheckURL dialled %v", d)
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
	p, sb := sandboxed(t, Options{Allow: []string{front.Listener.Addr().String()}})
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
	// The policy refused the target before any dial: only front was dialled.
	for _, d := range sb.Dials() {
		if d != front.Listener.Addr().String() {
			t.Errorf("dialled %s; want only the allowed %s", d, front.Listener.Addr())
		}
	}
}

// The sandbox itself: were the policy to let an address through, the
// sandbox refuses the dial (and the DNS query) and records it, so nothing
// leaves the machine.
func TestSandboxCatchesARegression(t *testing.T) {
	sb := &Sandbox{}
	var told []string
	sb.OnRefuse = func(addr string) { told = append(told, addr) }
	// A policy that allows what it must not, as a regression would.
	p, err := New(Options{Allow: []string{"169.254.0.0/16", "10.0.0.0/8"}, Sandbox: sb})
	if err != nil {
		t.Fatal(err)
	}
	c := p.Client(nil)
	for _, u := range []string{"http://169.254.169.254/latest/meta-data", "http://10.0.0.7:8080/mcp"} {
		if _, err := c.Get(u); !errors.Is(err, ErrOffLoopback) {
			t.Errorf("%s: err = %v; want the sandbox's refusal", u, err)
		}
	}
	if err := p.CheckURL(t.Context(), "http://vendor.example/mcp"); !errors.Is(err, ErrResolve) {
		t.Errorf("a name: err = %v; want ErrResolve (no DNS query sent)", err)
	}
	want := []string{"169.254.169.254:80", "10.0.0.7:8080"}
	if got := sb.Dials(); !slices.Equal(got, want) {
		t.Errorf("dials %v; want %v", got, want)
	}
	r := sb.Refused()
	if len(r) < 3 || !slices.Equal(r[:2], want) || !strings.HasPrefix(r[2], "dns ") || !slices.Equal(told, r) {
		t.Errorf("refused %v, told %v; want the two dials, then DNS", r, told)
	}
}

func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1/", "http://[::1]/", "http://0x7f.1/", "http://2130706433/", "http://a@127.0.0.1/"} {
		f.Add(s)
	}
	// No DNS while fuzzing: names fail to resolve at once.
	p, _ := New(Options{Sandbox: &Sandbox{}})
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
