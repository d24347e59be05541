package cache

import (
	"errors"
	"fmt"
	"time"

	"github.com/toolhub/toolhub/registry"
)

// Policy says how the results of one tool or capability are cached.
type Policy struct {
	// TTL is how long a result is fresh; zero means it is not cached
	// (unless the config's default says otherwise).
	TTL registry.Duration `json:"ttl,omitempty" yaml:"ttl,omitempty"`
	// NoCache turns caching off, whatever the TTL.
	NoCache bool `json:"no_cache,omitempty" yaml:"no_cache,omitempty"`
	// StaleWhileRevalidate is how long after TTL a stale result is still
	// answered at once while one background call refreshes it. Zero
	// means none: an expired entry is a miss.
	StaleWhileRevalidate registry.Duration `json:"stale_while_revalidate,omitempty" yaml:"stale_while_revalidate,omitempty"`
	// KeepStale is how long after TTL a result is kept as the last known
	// good answer, for the fallback chain when every vendor failed. Zero
	// means [DefaultKeepStale]; the entry is kept for
	// max(StaleWhileRevalidate, KeepStale) after TTL.
	KeepStale registry.Duration `json:"keep_stale,omitempty" yaml:"keep_stale,omitempty"`
	// Personal results depend on who asks: the tenant is part of the key.
	Personal bool `json:"personal,omitempty" yaml:"personal,omitempty"`
}

// DefaultKeepStale is how long an entry outlives its TTL as last known good.
const DefaultKeepStale = 24 * time.Hour

// Cacheable reports whether the policy caches at all.
func (p Policy) Cacheable() bool { return !p.NoCache && p.TTL > 0 }

// keep is how long the entry is kept after its TTL.
func (p Policy) keep() time.Duration {
	k := p.KeepStale.D()
	if k <= 0 {
		k = DefaultKeepStale
	}
	return max(k, p.StaleWhileRevalidate.D())
}

// Config is the cache section of toolhub.yaml:
//
//	cache:
//	  default: {ttl: 0s}                     # not cached unless listed
//	  tools:
//	    weather.current: {ttl: 10m, stale_while_revalidate: 1m, keep_stale: 6h}
//	    maps/route: {ttl: 1h}
//	    calendar.next: {ttl: 1m, personal: true}
//	    image.generate: {no_cache: true}
type Config struct {
	// Default applies to every tool and capability not listed; its zero
	// value caches nothing.
	Default Policy `json:"default,omitzero" yaml:"default,omitempty"`
	// Tools by capability name ("weather.current"), vendor tool
	// ("weather-a/current") or catalog name ("weather-a__current").
	Tools map[string]Policy `json:"tools,omitempty" yaml:"tools,omitempty"`
}

// Validate reports what is wrong with the config, naming the tool.
func (c Config) Validate() error {
	var errs []error
	check := func(name string, p Policy) {
		if p.TTL < 0 || p.StaleWhileRevalidate < 0 || p.KeepStale < 0 {
			errs = append(errs, fmt.Errorf("cache: %s: durations must not be negative", name))
		}
	}
	check("default", c.Default)
	for name, p := range c.Tools {
		check(fmt.Sprintf("tool %q", name), p)
	}
	return errors.Join(errs...)
}
