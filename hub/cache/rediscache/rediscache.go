// Package rediscache is a [cache.Cache] in Redis, shared by every hub
// instance pointed at it (internal/backend opens it when redis is set).
package rediscache

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolhub/toolhub/hub/cache"
)

// Options configure [New]. A nil *Options, and every zero
// field, means the default.
type Options struct {
	// Prefix goes before every key; zero means "toolhub:cache:". Give each
	// hub (and each test) its own.
	Prefix string
	// Now is the clock that stamps and expires entries; nil means
	// time.Now. Redis also expires each key on its own (real) clock, at
	// ttl+keep plus a second.
	Now func() time.Time
}

// Cache is a [cache.Cache] in Redis, shared by every hub instance pointed at it.
// A value is stored as a string: stored-at and expires-at (two big-endian
// int64 Unix nanoseconds), then the bytes.
type Cache struct {
	c      redis.UniversalClient
	prefix string
	now    func() time.Time
}

var _ cache.Cache = (*Cache)(nil)

// New returns a cache on c.
func New(c redis.UniversalClient, opts *Options) *Cache {
	r := &Cache{c: c, prefix: "toolhub:cache:", now: time.Now}
	if opts != nil {
		if opts.Prefix != "" {
			r.prefix = opts.Prefix
		}
		if opts.Now != nil {
			r.now = opts.Now
		}
	}
	return r
}

const redisHeader = 16

// Get implements [Cache].
func (r *Cache) Get(ctx context.Context, key string) ([]byte, time.Time, bool, error) {
	b, err := r.c.Get(ctx, r.prefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, time.Time{}, false, nil
	}
	if err != nil {
		return nil, time.Time{}, false, fmt.Errorf("cache: redis get: %w", err)
	}
	if len(b) < redisHeader {
		return nil, time.Time{}, false, nil // not ours; treat as a miss
	}
	stored := time.Unix(0, int64(binary.BigEndian.Uint64(b))).UTC()
	expires := time.Unix(0, int64(binary.BigEndian.Uint64(b[8:])))
	if !r.now().Before(expires) {
		return nil, time.Time{}, false, nil
	}
	return b[redisHeader:], stored, true, nil
}

// Set implements [Cache].
func (r *Cache) Set(ctx context.Context, key string, value []byte, ttl, keep time.Duration) error {
	if err := cache.CheckTTL(ttl, keep); err != nil {
		return err
	}
	now := r.now()
	b := make([]byte, redisHeader+len(value))
	binary.BigEndian.PutUint64(b, uint64(now.UnixNano()))
	binary.BigEndian.PutUint64(b[8:], uint64(now.Add(ttl+keep).UnixNano()))
	copy(b[redisHeader:], value)
	if err := r.c.Set(ctx, r.prefix+key, b, ttl+keep+time.Second).Err(); err != nil {
		return fmt.Errorf("cache: redis set: %w", err)
	}
	return nil
}

// Delete implements [Cache].
func (r *Cache) Delete(ctx context.Context, key string) error {
	if err := r.c.Del(ctx, r.prefix+key).Err(); err != nil {
		return fmt.Errorf("cache: redis del: %w", err)
	}
	return nil
}

// scan calls fn with batches of full keys matching the prefix.
func (r *Cache) scan(ctx context.Context, prefix string, fn func([]string) error) error {
	match := globEscape(r.prefix+prefix) + "*"
	var cursor uint64
	for {
		keys, next, err := r.c.Scan(ctx, cursor, match, 512).Result()
		if err != nil {
			return fmt.Errorf("cache: redis scan: %w", err)
		}
		if len(keys) > 0 {
			if err := fn(keys); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// DeletePrefix implements [Cache] with SCAN and DEL: it is O(keys in the
// hub), for the admin API, not for the call path.
func (r *Cache) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	n := 0
	err := r.scan(ctx, prefix, func(keys []string) error {
		d, err := r.c.Del(ctx, keys...).Result()
		n += int(d)
		if err != nil {
			return fmt.Errorf("cache: redis del: %w", err)
		}
		return nil
	})
	return n, err
}

// Size implements [Cache] with SCAN and STRLEN (O(keys), for status pages).
func (r *Cache) Size(ctx context.Context) (int64, error) {
	var total int64
	err := r.scan(ctx, "", func(keys []string) error {
		p := r.c.Pipeline()
		cmds := make([]*redis.IntCmd, len(keys))
		for i, k := range keys {
			cmds[i] = p.StrLen(ctx, k)
		}
		if _, err := p.Exec(ctx); err != nil {
			return fmt.Errorf("cache: redis strlen: %w", err)
		}
		for i, c := range cmds {
			if l := c.Val(); l >= redisHeader {
				total += int64(len(keys[i])-len(r.prefix)) + l - redisHeader
			}
		}
		return nil
	})
	return total, err
}

var globEscaper = strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`)

func globEscape(s string) string { return globEscaper.Replace(s) }
