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
	fail    bool          // answer 503
	hold    chan struct{} // non-nil: each fetch waits until it is closed
	held    chan struct{} // a fetch is waiting on hold
	fetches atomic.Int32
}

func newTestIssuer(t testing.TB, kids ...string) *testIssuer {
	is := &testIssuer{keys: map[string]ed25519.PrivateKey{}, held: make(chan struct{}, 100)}
	for _, k := range kids {
		is.add(k)
	}
	is.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		is.fetches.Add(1)
		is.mu.Lock()
		hold, fail := is.hold, is.fail
		is.mu.Unlock()
		if hold != nil {
			is.held <- struct{}{}
			select {
			case <-hold:
			case <-r.Context().Done():
				return
			}
		}
		if fail {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
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

// failing makes the issuer answer 503 (or its keys again).
func (is *testIssuer) failing(fail bool) {
	is.mu.Lock()
	is.fail = fail
	is.mu.Unlock()
}

// slow makes every later fetch wait until the test ends.
func (is *testIssuer) slow(t *testing.T) {
	is.mu.Lock()
	is.hold = make(chan struct{})
	t.Cleanup(func() { close(is.hold) }) // before the server's Close, which waits for its handlers
	is.mu.Unlock()
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
	return setupWith(t, is, nil)
}

// setupWith is setup with c fetching the keys (nil: the default client).
func setupWith(t *testing.T, is Issuer, c *http.Client) (*Verifier, *testIssuer, *clock) {
	ti := newTestIssuer(t, "k1")
	is.Issuer, is.JWKSURL = "https://issuer.test", ti.srv.URL
	clk := &clock{}
	clk.t.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	v, err := New(Config{Resource: "https://hub.test/mcp", Issuers: []Issuer{is}}, &Options{Now: clk.now, HTTPClient: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.settle)
	return v, ti, clk
}

// settle waits until no fetch of any issuer's keys is in flight.
func (v *Verifier) settle() {
	for _, is := range v.issuers {
		is.keys.mu.Lock()
		c := is.keys.inflight
		is.keys.mu.Unlock()
		if c != nil {
			<-c.done
		}
	}
}

// inflightTransport counts the requests in flight.
type inflightTransport struct{ n atomic.Int32 }

func (tr *inflightTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tr.n.Add(1)
	defer tr.n.Add(-1)
	return http.DefaultTransport.RoundTrip(r)
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
		{"no exp", jwt.MapClaims{"iss": "https://issuer.test", "aud": "https://hub.test/mcp", "tenant": "acme"}, auth.Principal{}, "the token has no exp claim"},
		// Each claim error names its claim (a token without aud was refused
		// as having no exp claim).
		{"no aud", base(jwt.MapClaims{"aud": nil, "tenant": "acme"}), auth.Principal{}, `the token has no aud claim (its audience must be "https://hub.test/mcp"`},
		{"empty aud", base(jwt.MapClaims{"aud": "", "tenant": "acme"}), auth.Principal{}, "the token has no aud claim"},
		{"aud not strings", base(jwt.MapClaims{"aud": []any{1}, "tenant": "acme"}), auth.Principal{}, "the token's aud claim is not a string or a list of strings"},
		{"other aud", base(jwt.MapClaims{"aud": "https://other.test", "tenant": "acme"}), auth.Principal{}, "the token is not for this resource"},
		{"expired", base(jwt.MapClaims{"exp": clk.now().Add(-time.Hour).Unix(), "tenant": "acme"}), auth.Principal{}, "the token has expired"},
		{"exp not a number", base(jwt.MapClaims{"exp": "tomorrow", "tenant": "acme"}), auth.Principal{}, "the token's exp claim is not a number"},
		{"exp 0", base(jwt.MapClaims{"exp": 0, "tenant": "acme"}), auth.Principal{}, "the token's exp claim is 0"},
		{"nbf ahead", base(jwt.MapClaims{"nbf": clk.now().Add(time.Hour).Unix(), "tenant": "acme"}), auth.Principal{}, "the token is not valid yet"},
		{"nbf not a number", base(jwt.MapClaims{"nbf": "soon", "tenant": "acme"}), auth.Principal{}, "the token's nbf claim is not a number"},
		{"no exp and no aud", jwt.MapClaims{"iss": "https://issuer.test", "tenant": "acme"}, auth.Principal{}, "the token has no exp claim (it must say when the token expires); the token has no aud claim"},
		{"expired, other aud", base(jwt.MapClaims{"exp": clk.now().Add(-time.Hour).Unix(), "aud": "x", "tenant": "acme"}), auth.Principal{}, "the token has expired (get a new one from the issuer); the token is not for this resource"},
		{"no iss", jwt.MapClaims{"aud": "https://hub.test/mcp", "exp": clk.now().Add(time.Minute).Unix(), "tenant": "acme"}, auth.Principal{}, "the token has no iss claim"},
		{"iss not a string", base(jwt.MapClaims{"iss": 7, "tenant": "acme"}), auth.Principal{}, "the token's iss claim is not a string"},
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
	// Keys are fetched again after keysTTL even when known (in the
	// background: the token verifies with the cached key).
	clk.advance(keysTTL)
	_, err := v.Verify(ctx, ti.sign(t, "k1", claims()))
	v.settle()
	if err != nil || ti.fetches.Load() != 4 {
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
