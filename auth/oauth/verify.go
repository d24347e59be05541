package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/toolhub/toolhub/auth"
)

// MetadataPrefix is the path of toolhub's protected resource metadata
// (RFC 9728); the resource URL's path follows it.
const MetadataPrefix = "/.well-known/oauth-protected-resource"

// ErrInvalidToken wraps every reason an access token is refused.
var ErrInvalidToken = errors.New("oauth: invalid access token")

// Options configure [New]. A nil *Options means the defaults.
type Options struct {
	// HTTPClient fetches issuers' metadata and keys; nil means a client
	// with a 10 s timeout.
	HTTPClient *http.Client
	// Now is the clock for expiry, the keys' cache and the backoff after a
	// failed fetch of an issuer's keys; nil means time.Now.
	Now func() time.Time
}

// Verifier checks access tokens for one resource.
type Verifier struct {
	cfg     Config
	now     func() time.Time
	issuers map[string]*issuer
	mdURL   string
	mdPath  string
}

type issuer struct {
	Issuer
	keys *keySet
}

// New returns the verifier of cfg, which must be valid and enabled.
// Nothing is fetched until the first token arrives.
func New(cfg Config, opts *Options) (*Verifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return nil, errors.New("oauth: no resource and issuers configured")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: fetchTimeoutIn}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	v := &Verifier{cfg: cfg, now: o.Now, issuers: map[string]*issuer{}}
	for _, is := range cfg.Issuers {
		if is.TenantClaim == "" {
			is.TenantClaim = "tenant"
		}
		if is.VendorClaim == "" {
			is.VendorClaim = "vendor"
		}
		if is.RolesClaim == "" {
			is.RolesClaim = "roles"
		}
		if is.DefaultRole == "" {
			is.DefaultRole = auth.RoleTenant
		}
		if len(is.Algorithms) == 0 {
			is.Algorithms = DefaultAlgorithms
		}
		v.issuers[is.Issuer] = &issuer{Issuer: is, keys: &keySet{issuer: is.Issuer, jwksURL: is.JWKSURL, client: o.HTTPClient, now: o.Now}}
	}
	u, _ := url.Parse(cfg.Resource)
	v.mdPath = MetadataPrefix + strings.TrimSuffix(u.Path, "/")
	v.mdURL = u.Scheme + "://" + u.Host + v.mdPath
	return v, nil
}

// LooksLikeJWT reports whether a bearer token has the shape of a JWT
// (three dot-separated parts), as opposed to a toolhub API key.
func LooksLikeJWT(tok string) bool { return strings.Count(tok, ".") == 2 }

// Verify checks an access token (signature by a trusted issuer's key,
// audience = the resource, not expired, not before nbf) and returns the
// principal its claims map to. Errors wrap [ErrInvalidToken] and say why,
// in words a client's developer can act on.
func (v *Verifier) Verify(ctx context.Context, token string) (auth.Principal, error) {
	var is *issuer
	var keyErr error
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		iss, err := t.Claims.GetIssuer()
		var ok bool
		switch is, ok = v.issuers[iss]; {
		case err != nil:
			keyErr = errors.New("the token's iss claim is not a string")
			return nil, keyErr
		case iss == "":
			keyErr = errors.New("the token has no iss claim (naming its issuer)")
			return nil, keyErr
		case !ok:
			keyErr = fmt.Errorf("issuer %q is not trusted here", iss)
			return nil, keyErr
		}
		if !containsString(is.Algorithms, t.Method.Alg()) {
			keyErr = fmt.Errorf("algorithm %s is not accepted from %q", t.Method.Alg(), iss)
			return nil, keyErr
		}
		kid, _ := t.Header["kid"].(string)
		var k any
		k, keyErr = is.keys.key(ctx, kid)
		return k, keyErr
	},
		jwt.WithValidMethods(DefaultAlgorithms),
		jwt.WithAudience(v.cfg.Resource),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(v.now),
		jwt.WithLeeway(30*time.Second),
	)
	if err != nil {
		return auth.Principal{}, fmt.Errorf("%w: %s", ErrInvalidToken, reason(err, keyErr, claims, v.cfg.Resource))
	}
	return is.principal(claims)
}

// reason says in plain words why jwt refused a token.
func reason(err, keyErr error, claims jwt.MapClaims, resource string) string {
	switch {
	case keyErr != nil:
		return keyErr.Error() // untrusted issuer, unknown key, issuer unreachable, …
	case errors.Is(err, jwt.ErrTokenInvalidClaims):
		if r := claimsReason(err, claims, resource); r != "" {
			return r
		}
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "the token's signature does not verify with the issuer's keys"
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "the token is not a well-formed JWT"
	}
	return err.Error()
}

// claimsReason names each claim of a signed token that failed validation
// (err wraps one error per claim; the claims are read again to say which
// claim and what is wrong with it).
func claimsReason(err error, claims jwt.MapClaims, resource string) string {
	var rs []string
	exp, expErr := claims.GetExpirationTime()
	_, hasExp := claims["exp"]
	switch {
	case expErr != nil:
		rs = append(rs, "the token's exp claim is not a number (seconds since 1970)")
	case exp == nil && hasExp:
		rs = append(rs, "the token's exp claim is 0 (it must say when the token expires)")
	case exp == nil:
		rs = append(rs, "the token has no exp claim (it must say when the token expires)")
	case errors.Is(err, jwt.ErrTokenExpired):
		rs = append(rs, "the token has expired (get a new one from the issuer)")
	}
	_, nbfErr := claims.GetNotBefore()
	switch {
	case nbfErr != nil:
		rs = append(rs, "the token's nbf claim is not a number (seconds since 1970)")
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		rs = append(rs, "the token is not valid yet (its nbf claim is in the future)")
	}
	aud, audErr := claims.GetAudience()
	switch {
	case audErr != nil:
		rs = append(rs, "the token's aud claim is not a string or a list of strings")
	case len(aud) == 0 || len(aud) == 1 && aud[0] == "":
		rs = append(rs, fmt.Sprintf("the token has no aud claim (its audience must be %q; ask the issuer for a token with resource=%s)", resource, resource))
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		rs = append(rs, fmt.Sprintf("the token is not for this resource (its audience must be %q; ask the issuer for a token with resource=%s)", resource, resource))
	}
	return strings.Join(rs, "; ")
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// strength orders roles for a token that maps to several.
var strength = map[string]int{auth.RoleOperator: 4, auth.RoleFinance: 3, auth.RoleVendor: 2, auth.RoleTenant: 1}

// principal maps a verified token's claims to whom it acts as.
func (is *issuer) principal(c jwt.MapClaims) (auth.Principal, error) {
	role := ""
	for _, val := range stringsOf(c[is.RolesClaim]) {
		if r, ok := is.Roles[val]; ok && strength[r] > strength[role] {
			role = r
		}
	}
	if role == "" {
		role = is.DefaultRole
	}
	sub, _ := c.GetSubject()
	p := auth.Principal{KeyID: "oauth:" + sub, Role: role}
	switch role {
	case "none":
		return auth.Principal{}, fmt.Errorf("%w: none of the token's %s (%v) maps to a toolhub role", ErrInvalidToken, is.RolesClaim, stringsOf(c[is.RolesClaim]))
	case auth.RoleTenant:
		p.Tenant = is.Tenant
		if p.Tenant == "" {
			p.Tenant, _ = c[is.TenantClaim].(string)
		}
		if p.Tenant == "" {
			return auth.Principal{}, fmt.Errorf("%w: the token has no %q claim naming its tenant", ErrInvalidToken, is.TenantClaim)
		}
	case auth.RoleVendor:
		p.Vendor, _ = c[is.VendorClaim].(string)
		if p.Vendor == "" {
			return auth.Principal{}, fmt.Errorf("%w: a vendor token needs a %q claim naming its vendor", ErrInvalidToken, is.VendorClaim)
		}
	}
	return p, nil
}

// stringsOf reads a claim that is a list of strings or one
// space-separated string (OAuth's "scope").
func stringsOf(v any) []string {
	switch v := v.(type) {
	case string:
		return strings.Fields(v)
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// MetadataPath is where [Verifier.MetadataHandler] is served (RFC 9728
// §3.1: the well-known prefix, then the resource's path).
func (v *Verifier) MetadataPath() string { return v.mdPath }

// MetadataURL is the metadata's absolute URL, on the resource's host.
func (v *Verifier) MetadataURL() string { return v.mdURL }

// Challenge is the WWW-Authenticate header of a 401 (RFC 9728 §5.1): it
// points MCP clients to the metadata, which names the issuers.
func (v *Verifier) Challenge() string {
	return `Bearer realm="toolhub", resource_metadata="` + v.mdURL + `"`
}

// Metadata is the protected resource metadata document (RFC 9728 §2).
type Metadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

// MetadataHandler serves the metadata (public: clients read it before
// they have a token).
func (v *Verifier) MetadataHandler() http.Handler {
	md := Metadata{Resource: v.cfg.Resource, BearerMethodsSupported: []string{"header"}, ScopesSupported: v.cfg.Scopes, ResourceName: "toolhub"}
	for _, is := range v.cfg.Issuers {
		md.AuthorizationServers = append(md.AuthorizationServers, is.Issuer)
	}
	body, _ := json.Marshal(md)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=300")
		_, _ = w.Write(body)
	})
}
