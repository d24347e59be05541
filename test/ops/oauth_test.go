package ops

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolhub/toolhub/internal/drill/drilltest"
)

// issuer is an OAuth authorization server as far as a resource server
// sees it: metadata (RFC 8414) naming a JWKS, and keys it signs with.
type issuer struct {
	url string
	rsa *rsa.PrivateKey
	ec  *ecdsa.PrivateKey
}

func startIssuer(t *testing.T) *issuer {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{rsa: rk, ec: ek}
	b64 := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	ecPub, _ := ek.PublicKey.Bytes() // 0x04 || X || Y
	jwks := map[string]any{"keys": []map[string]any{
		{"kty": "RSA", "kid": "rsa-1", "use": "sig", "alg": "RS256", "n": b64(rk.N.Bytes()), "e": b64(big.NewInt(int64(rk.E)).Bytes())},
		{"kty": "EC", "kid": "ec-1", "use": "sig", "alg": "ES256", "crv": "P-256", "x": b64(ecPub[1:33]), "y": b64(ecPub[33:])},
	}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": is.url, "jwks_uri": is.url + "/jwks",
			"authorization_endpoint": is.url + "/authorize", "token_endpoint": is.url + "/token"})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) { _ = json.NewEncoder(w).Encode(jwks) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	is.url = srv.URL
	return is
}

// token signs claims with the issuer's RSA key (or EC with ec), as the
// issuer would after an authorization code flow.
func (is *issuer) token(t *testing.T, claims jwt.MapClaims, ec bool) string {
	t.Helper()
	m, kid, key := jwt.SigningMethod(jwt.SigningMethodRS256), "rsa-1", any(is.rsa)
	if ec {
		m, kid, key = jwt.SigningMethodES256, "ec-1", is.ec
	}
	tok := jwt.NewWithClaims(m, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const resource = "http://toolhub.test/mcp"

const oauthConfig = `addr: 127.0.0.1:0
outbound: {allow: ["{{vendor_host}}"]}
auth:
  enabled: true
  oauth:
    resource: ` + resource + `
    issuers:
      - issuer: "{{issuer}}"
        roles: {toolhub-admin: operator}
vendors:
  - id: weather-a
    mcp: {transport: http, url: "{{vendor}}/weather-a/mcp"}
    probe: {disabled: true}
tenants:
  - {id: acme, tools: ["weather-a__*"]}
`

// without returns c without the claim name.
func without(c jwt.MapClaims, name string) jwt.MapClaims {
	delete(c, name)
	return c
}

// bearer adds a token to every request of an MCP client.
type bearer struct{ tok string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPClientWithOAuthToken: toolhub is an OAuth resource server. An MCP
// client with an access token from a trusted issuer calls a tool as the
// token's tenant; tokens for another audience, expired, from an untrusted
// issuer or with a bad signature get 401 with the metadata's address; an
// operator token (mapped from a role claim) issues an API key, and the
// API key works too.
func TestMCPClientWithOAuthToken(t *testing.T) {
	is := startIssuer(t)
	vs := startVendor(t)
	h := startHub(t, strings.ReplaceAll(oauthConfig, "{{issuer}}", is.url), vs)
	now := time.Now()
	claims := func(over jwt.MapClaims) jwt.MapClaims {
		c := jwt.MapClaims{"iss": is.url, "sub": "alice", "aud": resource, "tenant": "acme",
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
		for k, v := range over {
			c[k] = v
		}
		return c
	}
	operator := is.token(t, claims(jwt.MapClaims{"roles": []string{"toolhub-admin"}, "tenant": nil}), false)
	drilltest.WaitFor(t, 60*time.Second, "weather-a ready", func() bool {
		req, _ := http.NewRequest("GET", h.URL()+"/v1/vendors", nil)
		req.Header.Set("Authorization", "Bearer "+operator)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 200 && strings.Contains(string(b), `"state":"ready"`)
	})

	// The MCP client: EC-signed token of tenant acme.
	good := is.token(t, claims(nil), true)
	c := gomcp.NewClient(&gomcp.Implementation{Name: "oauth-client", Version: "1.0.0"}, nil)
	s, err := c.Connect(t.Context(), &gomcp.StreamableClientTransport{Endpoint: h.URL() + "/mcp", DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearer{good}}}, nil)
	if err != nil {
		t.Fatalf("MCP connect with a good token: %v\n%s", err, h.Tail(10))
	}
	defer s.Close()
	res, err := s.CallTool(t.Context(), &gomcp.CallToolParams{Name: "weather-a__current_weather", Arguments: map[string]any{"city": "Paris"}})
	if err != nil || res.IsError {
		t.Fatalf("tools/call with a good token: %v %+v", err, res)
	}
	// No OTEL_* variable and no telemetry block: tracing is off, so no
	// trace context goes to the vendor.
	for _, tp := range vs.traceparents() {
		if tp != "" {
			t.Errorf("tracing off, yet the vendor got traceparent %q", tp)
		}
	}

	// Refused tokens, each with its reason and the metadata's address.
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	forged := jwt.NewWithClaims(jwt.SigningMethodRS256, claims(nil))
	forged.Header["kid"] = "rsa-1"
	badSig, _ := forged.SignedString(other)
	stranger := jwt.NewWithClaims(jwt.SigningMethodRS256, claims(jwt.MapClaims{"iss": "https://other-issuer.test"}))
	stranger.Header["kid"] = "rsa-1"
	wrongIss, _ := stranger.SignedString(is.rsa)
	for _, tc := range []struct {
		name, token, want string
	}{
		{"no token", "", "missing"},
		{"other audience", is.token(t, claims(jwt.MapClaims{"aud": "http://other.test/mcp"}), false), "not for this resource"},
		{"expired", is.token(t, claims(jwt.MapClaims{"exp": now.Add(-time.Hour).Unix()}), false), "expired"},
		// Issue 32, item 7: each missing claim is named (no aud was "no exp claim").
		{"no audience", is.token(t, without(claims(nil), "aud"), false), "the token has no aud claim"},
		{"no expiry", is.token(t, without(claims(nil), "exp"), false), "the token has no exp claim"},
		{"untrusted issuer", wrongIss, "not trusted"},
		{"bad signature", badSig, "signature"},
		{"no tenant", is.token(t, claims(jwt.MapClaims{"tenant": nil}), false), "tenant"},
	} {
		req, _ := http.NewRequest("POST", h.URL()+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		wa := resp.Header.Get("WWW-Authenticate")
		if resp.StatusCode != 401 || !strings.Contains(wa, `resource_metadata="http://toolhub.test/.well-known/oauth-protected-resource/mcp"`) ||
			!strings.Contains(string(b), tc.want) {
			t.Errorf("%s: %d, WWW-Authenticate %q, body %s; want 401 with resource_metadata and %q", tc.name, resp.StatusCode, wa, b, tc.want)
		}
	}

	// The metadata, public, names the resource and its issuer.
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		resp, err := http.Get(h.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		var md struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		err = json.NewDecoder(resp.Body).Decode(&md)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || md.Resource != resource || len(md.AuthorizationServers) != 1 || md.AuthorizationServers[0] != is.url {
			t.Errorf("GET %s: %d %+v %v", path, resp.StatusCode, md, err)
		}
	}

	// The operator token issues a tenant API key; the key calls a tool.
	req, _ := http.NewRequest("POST", h.URL()+"/v1/admin/keys", strings.NewReader(`{"role":"tenant","tenant":"acme"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+operator)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var issued struct{ Token string }
	_ = json.NewDecoder(resp.Body).Decode(&issued)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(issued.Token, "thk_") {
		t.Fatalf("operator token issuing a key: %d %+v", resp.StatusCode, issued)
	}
	req, _ = http.NewRequest("POST", h.URL()+"/v1/tools/weather-a__current_weather/call", strings.NewReader(`{"arguments":{"city":"Oslo"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+issued.Token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("call with an API key next to OAuth: %d %s", resp.StatusCode, b)
	}
}
