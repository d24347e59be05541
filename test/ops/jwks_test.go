package ops

import (
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const jwksConfig = `addr: 127.0.0.1:0
outbound: {allow: ["{{vendor_host}}"]}
auth:
  enabled: true
  oauth:
    resource: ` + resource + `
    issuers:
      - issuer: "{{failing}}"
        jwks_url: "{{failing}}/jwks"
        tenant: acme
      - issuer: "{{issuer}}"
vendors:
  - id: weather-a
    mcp: {transport: http, url: "{{vendor}}/weather-a/mcp"}
    probe: {disabled: true}
tenants:
  - {id: acme, tools: ["weather-a__*"]}
`

// maxGETs is how many fetches of a failing issuer's keys toolhub may make
// in elapsed: one, then one each time the backoff after a failure is over
// (1 s, doubling, at most 30 s: auth/oauth's backoffMin and backoffMax).
func maxGETs(elapsed time.Duration) int {
	n, at, b := 1, time.Duration(0), time.Second
	for at+b <= elapsed {
		n, at, b = n+1, at+b, min(2*b, 30*time.Second)
	}
	return n
}

// TestJWKSFetchesBounded (issue 32, item 5): a real `toolhub serve` with
// two OAuth issuers, one whose JWKS answers 503. 50 tokens at once naming
// the failing issuer, then 50 more, are refused with the issuer's answer
// and make the hub fetch its keys at most once per backoff (they made one
// GET each: 50 in 0.35 s), while the other issuer's tokens are accepted.
func TestJWKSFetchesBounded(t *testing.T) {
	var gets atomic.Int32
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	t.Cleanup(failing.Close)
	is := startIssuer(t)
	vs := startVendor(t)
	cfg := strings.ReplaceAll(strings.ReplaceAll(jwksConfig, "{{failing}}", failing.URL), "{{issuer}}", is.url)
	h := startHub(t, cfg, vs)

	forger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	forged := make([]string, 50)
	for i := range forged {
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": failing.URL, "aud": resource, "sub": fmt.Sprint("anon-", i),
			"exp": time.Now().Add(time.Hour).Unix()})
		tok.Header["kid"] = fmt.Sprint("k", i)
		if forged[i], err = tok.SignedString(forger); err != nil {
			t.Fatal(err)
		}
	}
	get := func(tok string) (int, string) {
		req, _ := http.NewRequest("GET", h.URL()+"/v1/tools", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	start := time.Now()
	for round := range 2 {
		var wg sync.WaitGroup
		for i, tok := range forged {
			wg.Go(func() {
				if code, body := get(tok); code != 401 || !strings.Contains(body, "503") {
					t.Errorf("round %d, forged token %d: %d %s; want 401 with the issuer's 503", round, i, code, body)
				}
			})
		}
		wg.Wait()
	}
	elapsed := time.Since(start)
	t.Logf("%d GETs in %s", gets.Load(), elapsed)
	if n, limit := int(gets.Load()), maxGETs(elapsed); n < 1 || n > limit {
		t.Errorf("100 forged tokens in %s made %d JWKS GETs at the failing issuer, want 1 to %d", elapsed.Round(time.Millisecond), n, limit)
	}

	// The other issuer's tokens are accepted meanwhile.
	good := is.token(t, jwt.MapClaims{"iss": is.url, "sub": "alice", "aud": resource, "tenant": "acme", "exp": time.Now().Add(time.Hour).Unix()}, true)
	if code, body := get(good); code != 200 {
		t.Errorf("a token of the healthy issuer: %d %s", code, body)
	}
}
