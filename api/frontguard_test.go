package api

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

func TestAdmit(t *testing.T) {
	s, _ := newTestServer(t)
	ts := httptest.NewServer(s)
	defer ts.Close()
	call := "/v1/tools/weather-a__current_weather/call"
	body := `{"arguments":{"city":"Oslo"}}`
	tests := []struct {
		name, method, path, ctype, body string
		hdr                             map[string]string
		want                            int
	}{
		{"json", "POST", call, "application/json; charset=utf-8", body, nil, 200},
		{"text/plain", "POST", call, "text/plain", body, nil, 415},
		{"a form", "POST", call, "application/x-www-form-urlencoded", body, nil, 415},
		{"other origin", "POST", call, "application/json", body, map[string]string{"Origin": "http://evil.example"}, 403},
		{"same origin", "POST", call, "application/json", body, map[string]string{"Origin": ts.URL, "Sec-Fetch-Site": "same-origin"}, 200},
		{"same site", "POST", call, "application/json", body, map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"a read from another origin", "GET", "/v1/tools", "", "", map[string]string{"Origin": "http://evil.example"}, 200},
		{"foreign host", "GET", "/v1/tools", "", "", map[string]string{"Host": "evil.example"}, 403},
		{"localhost", "GET", "/v1/tools", "", "", map[string]string{"Host": "localhost"}, 200},
		{"[::1]", "GET", "/v1/tools", "", "", map[string]string{"Host": "[::1]:80"}, 200},
		{"too large", "POST", call, "application/json", `{"arguments":{"city":"` + strings.Repeat("x", 65<<10) + `"}}`, nil, 413},
		{"too deep", "POST", call, "application/json", strings.Repeat("[", 100) + strings.Repeat("]", 100), nil, 400},
		{"no body needs no type", "POST", "/v1/tools/nope/call", "", "", nil, 404},
		{"a public route takes no body", "POST", "/healthz", "application/json", "{}", nil, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rd io.Reader
			if tt.body != "" {
				rd = strings.NewReader(tt.body)
			}
			r, _ := http.NewRequest(tt.method, ts.URL+tt.path, rd)
			if tt.ctype != "" {
				r.Header.Set("Content-Type", tt.ctype)
			}
			for k, v := range tt.hdr {
				if k == "Host" {
					r.Host = v
				} else {
					r.Header.Set(k, v)
				}
			}
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("%d %s, want %d", resp.StatusCode, b, tt.want)
			}
		})
	}
}

// With authentication on, any Host is served (a proxy's name); the
// cross-origin refusal stays.
func TestAdmitWithAuth(t *testing.T) {
	s := NewServer(hub.NewGateway(registry.NewCatalog(), upstreams{}, nil), &Options{Authenticate: func(*http.Request) (auth.Principal, error) {
		return auth.Principal{Role: auth.RoleOperator}, nil
	}})
	defer s.Close()
	ts := httptest.NewServer(s)
	defer ts.Close()
	for _, tt := range []struct {
		host, origin string
		want         int
	}{{"hub.example.com", "", 200}, {"hub.example.com", "http://evil.example", 403}} {
		r, _ := http.NewRequest("POST", ts.URL+"/v1/nothing", strings.NewReader(`{}`))
		r.Host = tt.host
		r.Header.Set("Content-Type", "application/json")
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.StatusCode; (tt.want == 200) != (got != 403) {
			t.Errorf("Host %s Origin %q: %d, want %d", tt.host, tt.origin, got, tt.want)
		}
	}
}

// A body that stops arriving is answered 408 once Timeouts.Read is over.
func TestAdmitReadTimeout(t *testing.T) {
	s, _ := newTestServer(t)
	s.opts.Timeouts.Read = 50 * time.Millisecond
	ts := httptest.NewServer(s)
	defer ts.Close()
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/tools/weather-a__current_weather/call HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"argu")
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("status %d, want 408", resp.StatusCode)
	}
}

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST:8080": true, "localhost.": true, "127.0.0.1:1": true, "127.1.2.3": true, "[::1]:8080": true, "::1": true,
		"evil.example": false, "evil.example:8080": false, "0.0.0.0": false, "10.0.0.1": false, "localhost.evil.example": false, "": false,
	} {
		if got := loopbackHost(host); got != want {
			t.Errorf("loopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}
