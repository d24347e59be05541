package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Roles.
const (
	RoleTenant   = "tenant"   // calls tools as its tenant
	RoleVendor   = "vendor"   // manages its own vendor registration, sees its own health and usage
	RoleOperator = "operator" // everything, including keys, approvals and the audit log
	RoleFinance  = "finance"  // reads usage reports
)

// Errors. Verification failures all read the same to the caller, so a
// probe learns nothing about which keys exist.
var (
	ErrInvalidKey = errors.New("auth: invalid, expired or revoked key")
	ErrNotFound   = errors.New("auth: key not found")
	// ErrEnded: a revoked or expired key is not rotated (a new key would
	// bring it back to life); issue a new one instead.
	ErrEnded = errors.New("auth: the key is revoked or expired; issue a new key instead of rotating it")
)

// Key is a stored API key. SecretHash is the SHA-256 of the secret; the
// secret itself is never stored.
type Key struct {
	ID         string     `json:"id"`
	Name       string     `json:"name,omitempty"`
	Role       string     `json:"role"`
	Tenant     string     `json:"tenant,omitempty"` // RoleTenant
	Vendor     string     `json:"vendor,omitempty"` // RoleVendor
	SecretHash string     `json:"-"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
}

// Principal is who a request acts as.
type Principal struct {
	KeyID  string `json:"key_id,omitempty"`
	Role   string `json:"role"`
	Tenant string `json:"tenant,omitempty"`
	Vendor string `json:"vendor,omitempty"`
}

// Is reports whether p has one of the roles.
func (p Principal) Is(roles ...string) bool {
	for _, r := range roles {
		if p.Role == r {
			return true
		}
	}
	return false
}

// Store keeps keys. Implementations: [NewMemoryStore], sqlitekeys.Open, and
// PostgreSQL (auth/pgkeys) for hubs that share their keys; all pass the
// contract in auth/authtest.
type Store interface {
	PutKey(ctx context.Context, k Key) error // insert or replace by ID
	GetKey(ctx context.Context, id string) (Key, error)
	ListKeys(ctx context.Context) ([]Key, error)
	Close() error
}

// Validate checks a key's role and subject.
func (k Key) Validate() error {
	switch k.Role {
	case RoleTenant:
		if k.Tenant == "" || k.Vendor != "" {
			return fmt.Errorf("a tenant key names a tenant (and no vendor)")
		}
	case RoleVendor:
		if k.Vendor == "" || k.Tenant != "" {
			return fmt.Errorf("a vendor key names a vendor (and no tenant)")
		}
	case RoleOperator, RoleFinance:
		if k.Vendor != "" || k.Tenant != "" {
			return fmt.Errorf("an %s key names neither tenant nor vendor", k.Role)
		}
	default:
		return fmt.Errorf("role %q: want tenant, vendor, operator or finance", k.Role)
	}
	return nil
}

const tokenPrefix = "thk_"

var tokenRE = regexp.MustCompile(`thk_[a-z0-9]{16}_[A-Za-z0-9_-]{43}`)

// Redact replaces every toolhub token in s.
func Redact(s string) string { return tokenRE.ReplaceAllString(s, "thk_[redacted]") }

// Issue creates a key with a fresh secret and returns the token, which is
// shown once and never stored. ttl 0 means no expiry.
func Issue(ctx context.Context, s Store, k Key, ttl time.Duration) (string, Key, error) {
	if err := k.Validate(); err != nil {
		return "", Key{}, err
	}
	var id [8]byte
	var secret [32]byte
	_, _ = rand.Read(id[:])
	_, _ = rand.Read(secret[:])
	k.ID = hex.EncodeToString(id[:])
	sec := base64.RawURLEncoding.EncodeToString(secret[:])
	k.SecretHash = hash(sec)
	k.CreatedAt = time.Now().UTC().Truncate(time.Microsecond)
	if ttl > 0 {
		e := k.CreatedAt.Add(ttl)
		k.ExpiresAt = &e
	}
	k.RevokedAt = nil
	if err := s.PutKey(ctx, k); err != nil {
		return "", Key{}, err
	}
	return tokenPrefix + k.ID + "_" + sec, k, nil
}

// Rotate issues a new key with the same role, subject and lifetime as id,
// and revokes id. It returns the new token. A revoked or expired key is
// not rotated ([ErrEnded]).
func Rotate(ctx context.Context, s Store, id string) (string, Key, error) {
	old, err := s.GetKey(ctx, id)
	if err != nil {
		return "", Key{}, err
	}
	if old.RevokedAt != nil || old.ExpiresAt != nil && !time.Now().Before(*old.ExpiresAt) {
		return "", Key{}, fmt.Errorf("%w (key %s)", ErrEnded, id)
	}
	var ttl time.Duration
	if old.ExpiresAt != nil {
		ttl = old.ExpiresAt.Sub(old.CreatedAt)
	}
	tok, k, err := Issue(ctx, s, Key{Name: old.Name, Role: old.Role, Tenant: old.Tenant, Vendor: old.Vendor}, ttl)
	if err != nil {
		return "", Key{}, err
	}
	return tok, k, Revoke(ctx, s, id)
}

// Revoke ends a key at once.
func Revoke(ctx context.Context, s Store, id string) error {
	k, err := s.GetKey(ctx, id)
	if err != nil {
		return err
	}
	if k.RevokedAt == nil {
		now := time.Now().UTC().Truncate(time.Microsecond)
		k.RevokedAt = &now
	}
	return s.PutKey(ctx, k)
}

// Verify checks a token and returns its principal.
func Verify(ctx context.Context, s Store, token string) (Principal, error) {
	rest, ok := strings.CutPrefix(token, tokenPrefix)
	if !ok {
		return Principal{}, ErrInvalidKey
	}
	id, sec, ok := strings.Cut(rest, "_")
	if !ok || len(id) != 16 {
		return Principal{}, ErrInvalidKey
	}
	k, err := s.GetKey(ctx, id)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return Principal{}, ErrInvalidKey
		}
		return Principal{}, err
	}
	if subtle.ConstantTimeCompare([]byte(hash(sec)), []byte(k.SecretHash)) != 1 {
		return Principal{}, ErrInvalidKey
	}
	now := time.Now()
	if k.RevokedAt != nil || k.ExpiresAt != nil && !now.Before(*k.ExpiresAt) {
		return Principal{}, ErrInvalidKey
	}
	return Principal{KeyID: k.ID, Role: k.Role, Tenant: k.Tenant, Vendor: k.Vendor}, nil
}

func hash(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}
