// Package redistest connects tests to the machine's real Redis
// (127.0.0.1:6379, or $TOOLHUB_TEST_REDIS) under key prefixes of their own.
//
//	c := redistest.Client(t)
//	p := redistest.Prefix(t, c) // unique; its keys are deleted when t ends
//
// A Redis that cannot be reached fails the test: `make test` starts one, so
// a skip would only hide a broken setup. TOOLHUB_SKIP_REDIS=1 skips instead.
package redistest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Addr is the Redis the tests use.
func Addr() string {
	if a := os.Getenv("TOOLHUB_TEST_REDIS"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

// Client connects to the test Redis; it is closed when t ends.
func Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: Addr()})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		msg := fmt.Sprintf("redis at %s is not reachable (%v): run `make services` (or set TOOLHUB_SKIP_REDIS=1 to skip)", Addr(), err)
		if os.Getenv("TOOLHUB_SKIP_REDIS") == "1" {
			t.Skip(msg)
		}
		t.Fatal(msg)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var seq atomic.Int64

// Prefix returns a key prefix no other test uses and deletes its keys
// when t ends.
func Prefix(t testing.TB, c *redis.Client) string {
	t.Helper()
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	p := fmt.Sprintf("test:%s:%d:%d:", name, time.Now().UnixNano(), seq.Add(1))
	t.Cleanup(func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, p+"*", 100).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
	})
	return p
}
