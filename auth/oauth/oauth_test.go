package oauth

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/toolhub/toolhub/auth"
)

// testIssuer serves a JWKS of Ed25519 keys that the test can rotate, and
// counts the fetches.
type testIssuer struct {
	srv     *httptest.Server
	mu      sync.Mutex
	keys    map[string]ed25519.PrivateKey
	fetches atomic.Int32
}

func newTestIssuer(t testing.TB, kids ...string) *testIssuer {
	is := &testIssuer{keys: map[string]ed25519.PrivateKey{}}
	for _, k := range kids {
		is.add(k)
	}
	is.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		is.fetches.Add(1)
		is.mu.Lock()
		defer is.mu.Unlock()
		var keys []map[string]string
		for kid, k := range is.keys {
			keys = append(keys, map[string]string{"kty": "OKP", "crv": "Ed25519", "kid": kid,
				"x": base64.RawURLEncoding.EncodeToString(k.Public().(ed25519.PublicKey))})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": keys})
	}))
	t.Cleanup(is.srv.Close)
	return is
}

func (is *testIssuer) add(kid string) {
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	is.mu.Lock()
	is.keys[kid] = k
	is.mu.Unlock()
}

func (is *testIssuer) sign(t *testing.T, kid string, c jwt.MapClaims) string {
	return is.signF(t, kid, c)
}

func (is *testIssuer) signF(t testing.TB, kid string, c jwt.MapClaims) string {
	is.mu.Lock()
	k := is.keys[kid]
	is.mu.Unlock()
	if k == nil {
		_, k, _ = ed25519.GenerateKey(rand.Reader) // a key the issuer never published
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type clock struct{ t atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.t.Load()) }
func (c *clock) advance(d time.Duration) { c.t.Add(int64(d)) }

func setup(t *testing.T, is Issuer) (*Verifier, *testIssuer, *clock) {
	ti := newTestIssuer(t, "k1")
	is.Issuer, is.JWKSURL = "https://issuer.test", ti.srv.URL
	clk := &clock{}
	clk.t.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	v, err := New(Config{Resource: "https://hub.test/mcp", Issuers: []Issuer{is}}, &Options{Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	return v, ti, clk
}

func TestClaimsMapToPrincipal(t *testing.T) {
	v, ti, clk := setup(t, Issuer{Roles: map[string]string{"admin": auth.RoleOperator, "books": auth.RoleFinance, "maker": auth.RoleVendor}})
	base := func(extra jwt.MapClaims) jwt.MapClaims {
		c := jwt.MapClaims{"iss": "https://issuer.test", "aud": []string{"https://hub.test/mcp"}, "sub": "u1", "exp": clk.now().Add(time.Minute).Unix()}
		for k, x := range extra {
			c[k] = x
		}
		return c
	}
	for _, tc := range []struct {
		name   string
		claims jwt.MapClaims
		want   auth.Principal
		err    string
	}{
		{"tenant from its claim", base(jwt.MapClaims{"tenant": "acme"}), auth.Principal{KeyID: "oauth:u1", Role: auth.RoleTenant, Tenant: "acme"}, ""},
		{"strongest role wins", base(jwt.MapClaims{"roles": []string{"books", "admin"}}), auth.Principal{KeyID: "oauth:u1", Role: auth.RoleOperator}, ""},
		{"vendor with its claim", base(jwt.MapClaims{"roles": "maker", "vendor": "doubao"}), auth.Principal{KeyID: "oauth:u1", Role: auth.RoleVendor, Vendor: "doubao"}, ""},
		{"vendor without one", base(jwt.MapClaims{"roles": "maker"}), auth.Principal{}, `"vendor" claim`},
		{"tenant without one", base(nil), auth.Principal{}, `"tenant" claim`},
		{"no exp", jwt.MapClaims{"iss": "https://issuer.test", "aud": "https://hub.test/mcp", "tenant": "acme"}, auth.Principal{}, "no exp"},
	} {
		p, err := v.Verify(context.Background(), ti.sign(t, "k1", tc.claims))
		if tc.err != "" {
			if !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want one about %s", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
		} else if d := cmp.Diff(tc.want, p); d != "" {
			t.Errorf("%s: principal (-want +got):\n%s", tc.name, d)
		}
	}
}

func TestKeysAreCachedAndRotationIsFollowed(t *testing.T) {
	v, ti, clk := setup(t, Issuer{Tenant: "acme"})
	claims := func() jwt.MapClaims {
		return jwt.MapClaims{"iss": "https://issuer.test", "aud": "https://hub.test/mcp", "exp": clk.now().Add(time.Minute).Unix()}
	}
	ctx := context.Background()
	for range 3 {
		if _, err := v.Verify(ctx, ti.sign(t, "k1", claims())); err != nil {
			t.Fatal(err)
		}
	}
	if n := ti.fetches.Load(); n != 1 {
		t.Fatalf("%d JWKS fetches for three tokens, want 1", n)
	}
	// Made-up key ids: one early fetch (the last was minRefetch ago), then
	// none until minRefetch has passed again.
	clk.advance(minRefetch)
	for range 3 {
		if _, err := v.Verify(ctx, ti.sign(t, "nope", claims())); err == nil || !strings.Contains(err.Error(), `no key "nope"`) {
			t.Fatalf("unknown key: %v", err)
		}
	}
	if n := ti.fetches.Load(); n != 2 {
		t.Fatalf("%d JWKS fetches after unknown key ids, want 2", n)
	}
	// The issuer rotates to k2: once minRefetch has passed, its tokens verify.
	ti.add("k2")
	clk.advance(minRefetch)
	if _, err := v.Verify(ctx, ti.sign(t, "k2", claims())); err != nil {
		t.Fatalf("rotated key: %v", err)
	}
	// Keys are fetched again after keysTTL even when known.
	clk.advance(keysTTL)
	if _, err := v.Verify(ctx, ti.sign(t, "k1", claims())); err != nil || ti.fetches.Load() != 4 {
		t.Fatalf("after the keys' TTL: %v, %d fetches, want 4", err, ti.fetches.Load())
	}
	// The issuer unreachable: the cached keys keep working.
	ti.srv.Close()
	clk.advance(keysTTL)
	if _, err := v.Verify(ctx, ti.sign(t, "k1", claims())); err != nil {
		t.Fatalf("issuer down, cached key: %v", err)
	}
}

func TestHMACAndNoneAreRefused(t *testing.T) {
	v, _, clk := setup(t, Issuer{Tenant: "acme"})
	c := jwt.MapClaims{"iss": "https://issuer.test", "aud": "https://hub.test/mcp", "exp": clk.now().Add(time.Minute).Unix()}
	hs, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte("secret"))
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, c).SignedString(jwt.UnsafeAllowNoneSignatureType)
	for _, tok := range []string{hs, none} {
		if _, err := v.Verify(context.Background(), tok); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("token %.20s…: %v, want refused", tok, err)
		}
	}
}

func TestMetadataAndChallenge(t *testing.T) {
	v, _, _ := setup(t, Issuer{Tenant: "acme"})
	if got, want := v.Challenge(), `Bearer realm="toolhub", resource_metadata="https://hub.test/.well-known/oauth-protected-resource/mcp"`; got != want {
		t.Errorf("Challenge = %s, want %s", got, want)
	}
	rec := httptest.NewRecorder()
	v.MetadataHandler().ServeHTTP(rec, httptest.NewRequest("GET", v.MetadataPath(), nil))
	var md Metadata
	if err := json.Unmarshal(rec.Body.Bytes(), &md); err != nil {
		t.Fatal(err)
	}
	want := Metadata{Resource: "https://hub.test/mcp", AuthorizationServers: []string{"https://issuer.test"}, BearerMethodsSupported: []string{"header"}, ResourceName: "toolhub"}
	if d := cmp.Diff(want, md); d != "" {
		t.Errorf("metadata (-want +got):\n%s", d)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"off", Config{}, ""},
		{"no resource", Config{Issuers: []Issuer{{Issuer: "https://i.test"}}}, "auth.oauth.resource"},
		{"no issuers", Config{Resource: "https://hub.test/mcp"}, "at least one issuer"},
		{"bad role", Config{Resource: "https://hub.test/mcp", Issuers: []Issuer{{Issuer: "https://i.test", Roles: map[string]string{"a": "admin"}}}}, `roles["a"] = "admin"`},
		{"bad algorithm", Config{Resource: "https://hub.test/mcp", Issuers: []Issuer{{Issuer: "https://i.test", Algorithms: []string{"HS256"}}}}, "HS256"},
	} {
		err := tc.cfg.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
