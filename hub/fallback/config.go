package fallback

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolhub/toolhub/registry"
)

// Policy orders the vendors of a chain.
type Policy string

// The chain policies.
const (
	// Ordered tries the chain in order: primary first.
	Ordered Policy = "ordered"
	// Weighted sends a share of calls to a chosen step first (a canary);
	// the rest follow the chain order. See [CapabilityConfig].Weights.
	Weighted Policy = "weighted"
	// Cheapest tries the cheapest step first, by [Options].Cost; ties
	// keep the chain order.
	Cheapest Policy = "cheapest"
)

// CapabilityConfig is the fallback configuration of one capability.
type CapabilityConfig struct {
	// Policy orders the chain; zero means Ordered.
	Policy Policy `json:"policy,omitempty" yaml:"policy,omitempty"`
	// Weights, for Weighted: the percent of calls that try a step
	// ("vendor/tool", as in the chain) first. Calls left over (100 minus
	// the sum) follow the chain order. {"sd-v2/txt2img": 5} is a 5% canary.
	Weights map[string]float64 `json:"weights,omitempty" yaml:"weights,omitempty"`
	// Queue: when every vendor failed and no last-known-good answer
	// exists, accept the call as a durable job and answer "queued". In
	// YAML, `queue: true`, or `queue: {deadline: 15m}` to also set
	// QueueDeadline.
	Queue Queueable `json:"queue,omitempty" yaml:"queue,omitempty"`
	// QueueDeadline is how long a queued job of the capability lives (it
	// is tried, or waits for a vendor, until then); zero means the jobs
	// section's deadline (15m by default).
	QueueDeadline registry.Duration `json:"queue_deadline,omitempty" yaml:"-"`
	// HighRisk capabilities never fall back to a weaker vendor while
	// Degraded: their calls are parked for review instead (see [Parker]).
	HighRisk bool `json:"high_risk,omitempty" yaml:"high_risk,omitempty"`
	// Core capabilities cannot be switched off by an operator.
	Core bool `json:"core,omitempty" yaml:"core,omitempty"`
	// Degradation overrides the default thresholds field by field.
	Degradation Thresholds `json:"degradation,omitzero" yaml:"degradation,omitempty"`
}

// Queueable says whether a capability's calls may become jobs. In YAML
// it is a bool or a mapping {deadline: 15m} (which means true).
type Queueable bool

// UnmarshalYAML reads a bool or a mapping (yaml.v3's obsolete unmarshaler
// form, so that this package needs no YAML library).
func (q *Queueable) UnmarshalYAML(unmarshal func(any) error) error {
	var b bool
	if err := unmarshal(&b); err == nil {
		*q = Queueable(b)
		return nil
	}
	var m map[string]any
	if err := unmarshal(&m); err != nil {
		return fmt.Errorf("queue: want true, false or {deadline: 15m}")
	}
	*q = true
	return nil
}

// UnmarshalYAML reads a capability's config, with `queue: {deadline: …}`.
func (c *CapabilityConfig) UnmarshalYAML(unmarshal func(any) error) error {
	type plain CapabilityConfig
	if err := unmarshal((*plain)(c)); err != nil {
		return err
	}
	var raw struct {
		Queue any `yaml:"queue"`
	}
	var all map[string]any
	if err := unmarshal(&all); err != nil {
		return err
	}
	raw.Queue = all["queue"]
	m, ok := raw.Queue.(map[string]any)
	if !ok {
		return nil
	}
	for k, v := range m {
		switch k {
		case "deadline":
			var d registry.Duration
			if err := d.UnmarshalText([]byte(fmt.Sprint(v))); err != nil {
				return fmt.Errorf("queue.deadline: %w", err)
			}
			if d <= 0 {
				return fmt.Errorf("queue.deadline is %v; want a positive duration like 15m", d.D())
			}
			c.QueueDeadline = d
		default:
			return fmt.Errorf("queue: unknown key %q; want deadline", k)
		}
	}
	return nil
}

// Config is the fallback section of toolhub.yaml:
//
//	fallback:
//	  degradation: {window: 1m, alert_error_rate: 0.2, degrade_error_rate: 0.5}
//	  capabilities:
//	    weather.current: {queue: false}
//	    image.generate:
//	      policy: weighted
//	      weights: {sd/txt2img-v2: 5}
//	      queue: {deadline: 15m}     # or queue: true (the jobs section's deadline)
//	    payment.refund: {high_risk: true, core: true}
type Config struct {
	// Degradation is the default thresholds of every capability; zero
	// fields mean [DefaultThresholds].
	Degradation Thresholds `json:"degradation,omitzero" yaml:"degradation,omitempty"`
	// Capabilities by name; a capability not listed is Ordered, not
	// queueable, not high-risk, not core.
	Capabilities map[string]CapabilityConfig `json:"capabilities,omitempty" yaml:"capabilities,omitempty"`
}

// Thresholds drive a capability's degradation mode from the health of its
// primary vendor tool (chain[0]) over a sliding window. A condition must
// hold for its hold time before the mode changes, and recovery holds
// longer than degradation. Zero fields mean the [DefaultThresholds] value.
type Thresholds struct {
	// Window is the sliding window of primary attempts.
	Window registry.Duration `json:"window,omitempty" yaml:"window,omitempty"`
	// MinSamples: with fewer attempts in the window, nothing is judged.
	MinSamples int `json:"min_samples,omitempty" yaml:"min_samples,omitempty"`

	// Alert when any of these is reached: the share of failed attempts
	// (vendor faults, timeouts and open breakers), the share of timeouts,
	// the mean latency of attempts that reached the vendor (zero: not
	// judged).
	AlertErrorRate    float64           `json:"alert_error_rate,omitempty" yaml:"alert_error_rate,omitempty"`
	AlertTimeoutShare float64           `json:"alert_timeout_share,omitempty" yaml:"alert_timeout_share,omitempty"`
	AlertLatency      registry.Duration `json:"alert_latency,omitempty" yaml:"alert_latency,omitempty"`
	// Degrade when any of these is reached.
	DegradeErrorRate    float64           `json:"degrade_error_rate,omitempty" yaml:"degrade_error_rate,omitempty"`
	DegradeTimeoutShare float64           `json:"degrade_timeout_share,omitempty" yaml:"degrade_timeout_share,omitempty"`
	DegradeLatency      registry.Duration `json:"degrade_latency,omitempty" yaml:"degrade_latency,omitempty"`

	// AlertHold: Normal → Alert once the alert condition held this long.
	AlertHold registry.Duration `json:"alert_hold,omitempty" yaml:"alert_hold,omitempty"`
	// DegradeHold: Alert → Degraded once the degrade condition held this long.
	DegradeHold registry.Duration `json:"degrade_hold,omitempty" yaml:"degrade_hold,omitempty"`
	// ProbeAfter: Degraded → Recovering after this long (the primary gets
	// a share of traffic again; one bad window sends it back to Degraded).
	ProbeAfter registry.Duration `json:"probe_after,omitempty" yaml:"probe_after,omitempty"`
	// RecoverHold: Recovering or Alert → Normal once the primary was
	// healthy this long.
	RecoverHold registry.Duration `json:"recover_hold,omitempty" yaml:"recover_hold,omitempty"`

	// AlertShare is the share of calls that try the secondary first in Alert.
	AlertShare float64 `json:"alert_share,omitempty" yaml:"alert_share,omitempty"`
	// RecoverShare is the share of calls that try the primary first while
	// Recovering.
	RecoverShare float64 `json:"recover_share,omitempty" yaml:"recover_share,omitempty"`
}

// DefaultThresholds are the thresholds used for zero fields.
var DefaultThresholds = Thresholds{
	Window:              registry.Duration(time.Minute),
	MinSamples:          10,
	AlertErrorRate:      0.2,
	AlertTimeoutShare:   0.1,
	DegradeErrorRate:    0.5,
	DegradeTimeoutShare: 0.3,
	AlertHold:           registry.Duration(10 * time.Second),
	DegradeHold:         registry.Duration(30 * time.Second),
	ProbeAfter:          registry.Duration(time.Minute),
	RecoverHold:         registry.Duration(2 * time.Minute),
	AlertShare:          0.1,
	RecoverShare:        0.25,
}

// or returns t with its zero fields taken from d.
func (t Thresholds) or(d Thresholds) Thresholds {
	pick := func(a, b registry.Duration) registry.Duration {
		if a > 0 {
			return a
		}
		return b
	}
	pickf := func(a, b float64) float64 {
		if a > 0 {
			return a
		}
		return b
	}
	t.Window = pick(t.Window, d.Window)
	if t.MinSamples <= 0 {
		t.MinSamples = d.MinSamples
	}
	t.AlertErrorRate = pickf(t.AlertErrorRate, d.AlertErrorRate)
	t.AlertTimeoutShare = pickf(t.AlertTimeoutShare, d.AlertTimeoutShare)
	t.AlertLatency = pick(t.AlertLatency, d.AlertLatency)
	t.DegradeErrorRate = pickf(t.DegradeErrorRate, d.DegradeErrorRate)
	t.DegradeTimeoutShare = pickf(t.DegradeTimeoutShare, d.DegradeTimeoutShare)
	t.DegradeLatency = pick(t.DegradeLatency, d.DegradeLatency)
	t.AlertHold = pick(t.AlertHold, d.AlertHold)
	t.DegradeHold = pick(t.DegradeHold, d.DegradeHold)
	t.ProbeAfter = pick(t.ProbeAfter, d.ProbeAfter)
	t.RecoverHold = pick(t.RecoverHold, d.RecoverHold)
	t.AlertShare = pickf(t.AlertShare, d.AlertShare)
	t.RecoverShare = pickf(t.RecoverShare, d.RecoverShare)
	return t
}

// Validate reports what is wrong with the config, naming the capability.
func (c Config) Validate() error {
	var errs []error
	if err := c.Degradation.validate(); err != nil {
		errs = append(errs, fmt.Errorf("fallback: degradation: %w", err))
	}
	for name, cc := range c.Capabilities {
		switch cc.Policy {
		case "", Ordered, Weighted, Cheapest:
		default:
			errs = append(errs, fmt.Errorf("fallback: capability %q: unknown policy %q; want ordered, weighted or cheapest", name, cc.Policy))
		}
		if len(cc.Weights) > 0 && cc.Policy != Weighted {
			errs = append(errs, fmt.Errorf("fallback: capability %q: weights need policy: weighted", name))
		}
		sum := 0.0
		for step, w := range cc.Weights {
			if w < 0 || !strings.Contains(step, "/") {
				errs = append(errs, fmt.Errorf("fallback: capability %q: weight %q: %v; want \"vendor/tool\": a percent ≥ 0", name, step, w))
			}
			sum += w
		}
		if sum > 100 {
			errs = append(errs, fmt.Errorf("fallback: capability %q: weights add up to %v%%, over 100%%", name, sum))
		}
		if err := cc.Degradation.validate(); err != nil {
			errs = append(errs, fmt.Errorf("fallback: capability %q: degradation: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

func (t Thresholds) validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"alert_error_rate", t.AlertErrorRate}, {"alert_timeout_share", t.AlertTimeoutShare}, {"degrade_error_rate", t.DegradeErrorRate},
		{"degrade_timeout_share", t.DegradeTimeoutShare}, {"alert_share", t.AlertShare}, {"recover_share", t.RecoverShare}} {
		if f.v < 0 || f.v > 1 {
			return fmt.Errorf("%s is %v; want a share between 0 and 1", f.name, f.v)
		}
	}
	for _, d := range []registry.Duration{t.Window, t.AlertLatency, t.DegradeLatency, t.AlertHold, t.DegradeHold, t.ProbeAfter, t.RecoverHold} {
		if d < 0 {
			return fmt.Errorf("a duration is negative (%v)", d.D())
		}
	}
	if t.MinSamples < 0 {
		return fmt.Errorf("min_samples is %d; want ≥ 0", t.MinSamples)
	}
	return nil
}
