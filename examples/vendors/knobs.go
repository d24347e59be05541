package vendors

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// ErrInvalidKnobs is wrapped by every error about a bad knob value.
var ErrInvalidKnobs = errors.New("vendors: invalid knobs")

// Mode is the fault a vendor injects into tools/call.
type Mode string

// The fault modes. The zero Mode ("") means [ModeOK].
const (
	ModeOK      Mode = "ok"      // answer normally
	ModeFail    Mode = "fail"    // answer with isError:true and a message
	ModeSlow    Mode = "slow"    // answer normally, after Latency (DefaultSlowLatency when zero)
	ModeHang    Mode = "hang"    // never answer; return when the request context ends
	ModeGarbage Mode = "garbage" // answer with structuredContent that violates the tool's output schema
	ModeHTTP500 Mode = "http500" // the HTTP layer answers 500 before MCP handling
	ModeHTTP429 Mode = "http429" // the HTTP layer answers 429 with Retry-After before MCP handling
)

var modes = []Mode{ModeOK, ModeFail, ModeSlow, ModeHang, ModeGarbage, ModeHTTP500, ModeHTTP429}

// DefaultSlowLatency is the delay of [ModeSlow] when Knobs.Latency is zero.
const DefaultSlowLatency = 2 * time.Second

// DefaultRetryAfter is the Retry-After of [ModeHTTP429] when Knobs.RetryAfter is zero.
const DefaultRetryAfter = time.Second

// ParseMode parses a mode name; "" is [ModeOK].
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return ModeOK, nil
	}
	if m := Mode(s); slices.Contains(modes, m) {
		return m, nil
	}
	return "", fmt.Errorf("%w: mode %q: want one of %v", ErrInvalidKnobs, s, modes)
}

func (m Mode) isHTTP() bool { return m == ModeHTTP500 || m == ModeHTTP429 }

// Knobs are a vendor's fault settings. The zero value is a healthy vendor
// showing all its tools.
type Knobs struct {
	// Mode is the fault to inject; zero means ModeOK.
	Mode Mode
	// Latency is added before every tools/call in every mode; zero means none.
	Latency time.Duration
	// FailRate is the fraction (0..1) of tools/call that get the fault. With a
	// fault Mode, zero means every call. With ModeOK, a nonzero FailRate fails
	// that fraction as ModeFail. Faults are spread evenly and deterministically:
	// 0.5 faults calls 1, 3, 5, …; 0.25 faults calls 1, 5, 9, … (counted from
	// the last change of Mode or FailRate).
	FailRate float64
	// RetryAfter is the Retry-After header of ModeHTTP429; zero means DefaultRetryAfter.
	RetryAfter time.Duration
	// Tools lists the visible tools; nil means all. Changing it sends
	// notifications/tools/list_changed to connected clients.
	Tools []string
}

// validate checks k against the vendor's tool names.
func (k Knobs) validate(all []string) error {
	if _, err := ParseMode(string(k.Mode)); err != nil {
		return err
	}
	if k.Latency < 0 || k.RetryAfter < 0 {
		return fmt.Errorf("%w: latency and retry_after must not be negative", ErrInvalidKnobs)
	}
	if math.IsNaN(k.FailRate) || k.FailRate < 0 || k.FailRate > 1 {
		return fmt.Errorf("%w: fail_rate %v: want 0..1", ErrInvalidKnobs, k.FailRate)
	}
	for _, t := range k.Tools {
		if !slices.Contains(all, t) {
			return fmt.Errorf("%w: tools: unknown tool %q: want some of %v", ErrInvalidKnobs, t, all)
		}
	}
	return nil
}

// hits reports whether the n-th call (0-based) since the last reset gets the
// fault at the given rate.
func hits(n int64, rate float64) bool {
	if rate <= 0 || rate >= 1 {
		return true
	}
	return math.Ceil(float64(n+1)*rate) > math.Ceil(float64(n)*rate)
}

// knobsJSON is the wire form of Knobs on the control endpoint.
type knobsJSON struct {
	Mode       Mode     `json:"mode"`
	Latency    string   `json:"latency"`
	FailRate   float64  `json:"fail_rate"`
	RetryAfter string   `json:"retry_after"`
	Tools      []string `json:"tools"`
}

// patch is the body of POST _control: each field present replaces that knob.
type patch struct {
	Mode       *Mode     `json:"mode"`
	Latency    *string   `json:"latency"`
	FailRate   *float64  `json:"fail_rate"`
	RetryAfter *string   `json:"retry_after"`
	Tools      *[]string `json:"tools"`
	// Reset zeroes the counters and forgets the recorded calls.
	Reset bool `json:"reset"`
}

// apply returns k with p's fields applied.
func (p patch) apply(k Knobs) (Knobs, error) {
	if p.Mode != nil {
		m, err := ParseMode(string(*p.Mode))
		if err != nil {
			return k, err
		}
		k.Mode = m
	}
	for _, d := range []struct {
		name string
		in   *string
		out  *time.Duration
	}{{"latency", p.Latency, &k.Latency}, {"retry_after", p.RetryAfter, &k.RetryAfter}} {
		if d.in == nil {
			continue
		}
		v, err := time.ParseDuration(*d.in)
		if err != nil {
			return k, fmt.Errorf("%w: %s: %v", ErrInvalidKnobs, d.name, err)
		}
		*d.out = v
	}
	if p.FailRate != nil {
		k.FailRate = *p.FailRate
	}
	if p.Tools != nil {
		k.Tools = slices.Clone(*p.Tools)
		if k.Tools == nil {
			k.Tools = []string{} // "tools": [] hides every tool
		}
	}
	return k, nil
}

func (k Knobs) wire(all []string) knobsJSON {
	tools := k.Tools
	if tools == nil {
		tools = all
	}
	mode := k.Mode
	if mode == "" {
		mode = ModeOK
	}
	return knobsJSON{
		Mode:       mode,
		Latency:    k.Latency.String(),
		FailRate:   k.FailRate,
		RetryAfter: k.RetryAfter.String(),
		Tools:      slices.Clone(tools),
	}
}
