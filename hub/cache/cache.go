package cache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// Cache stores encoded results under string keys. An entry is served for
// ttl+keep after it is stored: the caller decides, from the stored-at time,
// whether it is fresh (age < ttl) or stale (kept for stale-while-revalidate
// and last-known-good answers). Implementations are safe for concurrent use
// and pass the same contract suite (see contract_test.go).
type Cache interface {
	// Get returns the value stored under key and when it was stored;
	// found is false when there is none or it has outlived ttl+keep. The
	// returned slice must not be modified.
	Get(ctx context.Context, key string) (value []byte, storedAt time.Time, found bool, err error)
	// Set stores value under key for ttl+keep; ttl must be positive and
	// keep not negative.
	Set(ctx context.Context, key string, value []byte, ttl, keep time.Duration) error
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// DeletePrefix removes every key that starts with prefix and returns
	// how many it removed. Use [ToolPrefix] to invalidate one tool.
	DeletePrefix(ctx context.Context, prefix string) (int, error)
	// Size returns the bytes held: the sum of len(key)+len(value) over
	// the live entries.
	Size(ctx context.Context) (int64, error)
}

// ErrBadTTL is returned by Set for a ttl that is not positive or a
// negative keep.
var ErrBadTTL = errors.New("cache: ttl must be positive and keep not negative")

// CheckTTL returns [ErrBadTTL] for a ttl or keep that Set must refuse;
// every [Cache] implementation calls it first in Set.
func CheckTTL(ttl, keep time.Duration) error {
	if ttl <= 0 || keep < 0 {
		return fmt.Errorf("%w (ttl %v, keep %v)", ErrBadTTL, ttl, keep)
	}
	return nil
}

// Key returns the cache key of a call to the named tool or capability with
// args: the name, the tenant (only for personal tools; pass "" otherwise)
// and a SHA-256 of the canonical JSON of args. Keys of one tool share
// [ToolPrefix](name).
func Key(name, tenant string, args map[string]any) (string, error) {
	var b bytes.Buffer
	if err := canonical(&b, args); err != nil {
		return "", fmt.Errorf("cache: key of %q: %w", name, err)
	}
	sum := sha256.Sum256(b.Bytes())
	t := "*"
	if tenant != "" {
		t = "t=" + tenant
	}
	return ToolPrefix(name) + t + ":" + hex.EncodeToString(sum[:]), nil
}

// ToolPrefix is the prefix shared by every key of one tool or capability.
func ToolPrefix(name string) string { return name + ":" }

// Canonical returns the canonical JSON of v: object keys sorted, numbers
// normalized (1, 1.0, json.Number("1e0") and int(1) all read "1"), no
// insignificant space. Values other than JSON's own types go through
// encoding/json first.
func Canonical(v any) ([]byte, error) {
	var b bytes.Buffer
	err := canonical(&b, v)
	return b.Bytes(), err
}

// canonical writes v's canonical JSON to b.
func canonical(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		s, _ := json.Marshal(x)
		b.Write(s)
	case float64:
		return number(b, x)
	case float32:
		return number(b, float64(x))
	case int:
		return number(b, float64(x))
	case int8:
		return number(b, float64(x))
	case int16:
		return number(b, float64(x))
	case int32:
		return number(b, float64(x))
	case int64:
		return number(b, float64(x))
	case uint:
		return number(b, float64(x))
	case uint8:
		return number(b, float64(x))
	case uint16:
		return number(b, float64(x))
	case uint32:
		return number(b, float64(x))
	case uint64:
		return number(b, float64(x))
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return fmt.Errorf("number %q: %w", x, err)
		}
		return number(b, f)
	case map[string]any:
		return canonicalObject(b, x)
	case []any:
		return canonicalArray(b, x)
	default:
		return canonicalOther(b, x)
	}
	return nil
}

// canonicalObject writes an object with its keys sorted.
func canonicalObject(b *bytes.Buffer, x map[string]any) error {
	keys := make([]string, 0, len(x))
	for k := range x {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		s, _ := json.Marshal(k)
		b.Write(s)
		b.WriteByte(':')
		if err := canonical(b, x[k]); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

// canonicalArray writes an array, its elements canonical.
func canonicalArray(b *bytes.Buffer, x []any) error {
	b.WriteByte('[')
	for i, e := range x {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := canonical(b, e); err != nil {
			return err
		}
	}
	b.WriteByte(']')
	return nil
}

// canonicalOther writes a value of none of JSON's own types: through
// encoding/json, then as the JSON value that reads back (numbers kept).
func canonicalOther(b *bytes.Buffer, x any) error {
	raw, err := json.Marshal(x)
	if err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var g any
	if err := d.Decode(&g); err != nil {
		return err
	}
	return canonical(b, g)
}

func number(b *bytes.Buffer, f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("number %v is not JSON", f)
	}
	if f == 0 {
		f = 0 // -0 reads 0
	}
	s, _ := json.Marshal(f)
	b.Write(s)
	return nil
}
