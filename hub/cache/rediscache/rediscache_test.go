package rediscache_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolhub/toolhub/hub/cache"
	"github.com/toolhub/toolhub/hub/cache/cachetest"
	"github.com/toolhub/toolhub/hub/cache/rediscache"
	"github.com/toolhub/toolhub/internal/x/redistest"
)

func TestContract(t *testing.T) {
	rc := redistest.Client(t)
	cachetest.Run(t, func(t *testing.T, now func() time.Time) cache.Cache {
		c := rediscache.New(rc, &rediscache.Options{Prefix: redistest.Prefix(t, rc), Now: now})
		t.Cleanup(func() { _, _ = c.DeletePrefix(context.Background(), "") })
		return c
	})
}
