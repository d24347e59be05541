package oauth

import (
	"errors"
	"fmt"
	"net/url"
	"slices"

	"github.com/toolhub/toolhub/auth"
)

// Config is `auth.oauth` in toolhub.yaml. The zero value is off.
type Config struct {
	// Resource is toolhub's resource URL as its clients reach it (e.g.
	// https://hub.example.com/mcp): the audience every access token must
	// carry, and the "resource" of the metadata. Required when Issuers are
	// set.
	Resource string `yaml:"resource"`
	// Issuers are the authorization servers whose tokens are accepted.
	Issuers []Issuer `yaml:"issuers"`
	// Scopes are advertised as scopes_supported in the metadata; nil
	// advertises none. toolhub does not require a scope: roles come from
	// the role claim.
	Scopes []string `yaml:"scopes"`
}

// Issuer is one trusted authorization server and how its claims map to a
// toolhub principal. Zero fields mean the defaults written next to them.
type Issuer struct {
	// Issuer is the token's "iss" claim, exactly (e.g.
	// https://login.example.com/realms/acme).
	Issuer string `yaml:"issuer"`
	// JWKSURL is where the issuer publishes its signing keys; "" means
	// the jwks_uri of its metadata (RFC 8414
	// /.well-known/oauth-authorization-server, then OpenID Connect
	// /.well-known/openid-configuration).
	JWKSURL string `yaml:"jwks_url"`
	// Tenant, when set, is the tenant of every token of this issuer (one
	// issuer per tenant); else the TenantClaim names it.
	Tenant string `yaml:"tenant"`
	// TenantClaim is the claim holding the tenant; default "tenant".
	TenantClaim string `yaml:"tenant_claim"`
	// VendorClaim is the claim holding the vendor of a vendor role;
	// default "vendor".
	VendorClaim string `yaml:"vendor_claim"`
	// RolesClaim holds the caller's roles: a list of strings or one
	// space-separated string (so "scope" works too); default "roles".
	RolesClaim string `yaml:"roles_claim"`
	// Roles maps a value of the roles claim to a toolhub role (tenant,
	// vendor, operator or finance). With several matches the strongest
	// wins: operator, finance, vendor, tenant.
	Roles map[string]string `yaml:"roles"`
	// DefaultRole is the role of a token none of whose values map; default
	// "tenant". "none" refuses such tokens.
	DefaultRole string `yaml:"default_role"`
	// Algorithms are the signing algorithms accepted; default RS256,
	// RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA.
	Algorithms []string `yaml:"algorithms"`
}

// DefaultAlgorithms are the asymmetric JWS algorithms accepted by default
// (never "none" nor HMAC: a resource server holds no shared secret).
var DefaultAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// Enabled reports whether OAuth access tokens are accepted.
func (c Config) Enabled() bool { return c.Resource != "" || len(c.Issuers) > 0 }

var roles = []string{auth.RoleTenant, auth.RoleVendor, auth.RoleOperator, auth.RoleFinance}

// Validate checks the block and reports every problem at once.
func (c Config) Validate() error {
	if !c.Enabled() {
		return nil
	}
	var errs []error
	if u, err := url.Parse(c.Resource); c.Resource == "" || err != nil || !u.IsAbs() || u.Host == "" || u.Fragment != "" {
		errs = append(errs, fmt.Errorf("auth.oauth.resource %q: want toolhub's absolute URL as clients reach it, e.g. https://hub.example.com/mcp (it is the tokens' audience)", c.Resource))
	}
	if len(c.Issuers) == 0 {
		errs = append(errs, errors.New("auth.oauth.issuers: name at least one issuer whose tokens to accept"))
	}
	seen := map[string]bool{}
	for i, is := range c.Issuers {
		where := fmt.Sprintf("auth.oauth.issuers[%d]", i)
		if u, err := url.Parse(is.Issuer); is.Issuer == "" || err != nil || !u.IsAbs() || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s.issuer %q: want the issuer's URL, exactly as its tokens' iss claim", where, is.Issuer))
		}
		if seen[is.Issuer] {
			errs = append(errs, fmt.Errorf("%s: issuer %q is listed twice", where, is.Issuer))
		}
		seen[is.Issuer] = true
		if is.JWKSURL != "" {
			if u, err := url.Parse(is.JWKSURL); err != nil || !u.IsAbs() || u.Host == "" {
				errs = append(errs, fmt.Errorf("%s.jwks_url %q: want an absolute URL", where, is.JWKSURL))
			}
		}
		for claim, role := range is.Roles {
			if !slices.Contains(roles, role) {
				errs = append(errs, fmt.Errorf("%s.roles[%q] = %q: want tenant, vendor, operator or finance", where, claim, role))
			}
		}
		if is.DefaultRole != "" && is.DefaultRole != "none" && !slices.Contains(roles, is.DefaultRole) {
			errs = append(errs, fmt.Errorf("%s.default_role %q: want tenant, vendor, operator, finance or none", where, is.DefaultRole))
		}
		for _, a := range is.Algorithms {
			if !slices.Contains(DefaultAlgorithms, a) {
				errs = append(errs, fmt.Errorf("%s.algorithms: %q is not one of %v", where, a, DefaultAlgorithms))
			}
		}
	}
	return errors.Join(errs...)
}
