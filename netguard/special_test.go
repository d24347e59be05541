package netguard

import (
	"errors"
	"strings"
	"testing"
)

// The addresses the first SSRF guard let through (issue 12, defect 15),
// and the other IANA special-purpose ranges, each with its reason.
func TestSpecialPurposeRegistries(t *testing.T) {
	p, sb := sandboxed(t, Options{})
	tests := []struct {
		url, want string // want "" means allowed
	}{
		{"http://192.0.0.192/", "metadata"},                      // Oracle cloud metadata
		{"http://[::127.0.0.1]/", "loopback"},                    // IPv4-compatible
		{"http://[64:ff9b::7f00:1]/", "NAT64 form of 127.0.0.1"}, // NAT64
		{"http://[64:ff9b::a9fe:a9fe]/", "metadata"},             // NAT64 of 169.254.169.254
		{"http://[2002:7f00:1::]/", "6to4 form of 127.0.0.1"},
		{"http://[2002:a00:1::]/", "private"}, // 6to4 of 10.0.0.1
		{"http://198.18.0.1/", "benchmarking"},
		{"http://198.19.255.255/", "benchmarking"},
		{"http://240.0.0.1/", "reserved"},
		{"http://255.255.255.255/", "broadcast"},
		{"http://0.1.2.3/", "this network"},
		{"http://192.0.2.10/", "documentation"},
		{"http://198.51.100.1/", "documentation"},
		{"http://192.88.99.1/", "6to4 relay"},
		{"http://224.0.0.1/", "multicast"},
		{"http://100.100.100.200/", "metadata"},
		{"http://168.63.129.16/", "metadata"},
		{"http://[::ffff:0:7f00:1]/", "loopback"}, // IPv4-translated
		{"http://[::ffff:169.254.169.254]/", "metadata"},
		{"http://[fe80::1%25eth0]/", "link-local"},
		{"http://[fc00::1]/", "unique local"},
		{"http://[fec0::1]/", "site-local"},
		{"http://[2001:db8::1]/", "documentation"},
		{"http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "Teredo"},
		{"http://[100::1]/", "discard"},
		{"http://[64:ff9b:1::1]/", "local-use NAT64"},
		{"http://[ff02::1]/", "multicast"},
		{"http://[::]/", "unspecified"},
		{"http://[::2]/", "IPv4-compatible"},
		// Public addresses pass, in every form that carries one.
		{"http://93.184.215.14/", ""},
		{"http://[::ffff:93.184.215.14]/", ""},
		{"http://[64:ff9b::5db8:d70e]/", ""},
		{"http://[2002:5db8:d70e::1]/", ""},
		{"http://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/", ""},
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

// A name that does not resolve is not a refusal: it may resolve later.
func TestUnresolvedIsNotRefused(t *testing.T) {
	sb := &Sandbox{}
	p, _ := New(Options{Sandbox: sb})
	err := p.CheckURL(t.Context(), "http://vendor.example/mcp")
	if !errors.Is(err, ErrResolve) || errors.Is(err, ErrRefused) {
		t.Fatalf("err = %v, want ErrResolve and not ErrRefused", err)
	}
	if r := sb.Refused(); len(r) == 0 || !strings.HasPrefix(r[0], "dns ") {
		t.Errorf("the sandbox saw no DNS query: %v", r)
	}
}
