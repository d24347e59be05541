package hub

import (
	"math"
	"strconv"
	"strings"

	"github.com/toolhub/toolhub/internal/x/jsonenc"
)

// AppendJSON appends p's JSON, byte for byte what encoding/json makes of
// it, without reflection (the fast path writes it into every result), and
// reports true. It reports false, b unchanged, where it would differ: a
// string holding <, > or & (encoding/json escapes them for HTML) or a
// number that is not finite (encoding/json refuses it).
func (p *Provenance) AppendJSON(b []byte) ([]byte, bool) {
	for _, s := range [...]string{p.Vendor, p.Tool, p.Capability, p.JobID, p.CallID} {
		if strings.ContainsAny(s, "<>&") {
			return b, false
		}
	}
	if !finite(p.LatencyMS) || !finite(p.AgeSeconds) {
		return b, false
	}
	open := len(b) + 1 // after the brace: a member written there has no comma before it
	name := func(b []byte, key string) []byte {
		if len(b) > open {
			b = append(b, ',')
		}
		return append(b, key...)
	}
	str := func(b []byte, key, v string) []byte {
		if v == "" {
			return b
		}
		return jsonenc.AppendString(name(b, key), v, true)
	}
	flag := func(b []byte, key string, v bool) []byte {
		if !v {
			return b
		}
		return append(name(b, key), "true"...)
	}
	b = append(b, '{')
	b = str(b, `"vendor":`, p.Vendor)
	b = str(b, `"tool":`, p.Tool)
	b = str(b, `"capability":`, p.Capability)
	b = strconv.AppendInt(name(b, `"attempts":`), int64(p.Attempts), 10)
	b = appendFloat(name(b, `"latency_ms":`), p.LatencyMS)
	b = flag(b, `"cached":`, p.Cached)
	b = flag(b, `"stale":`, p.Stale)
	if p.AgeSeconds != 0 {
		b = appendFloat(name(b, `"age_s":`), p.AgeSeconds)
	}
	b = flag(b, `"fallback":`, p.Fallback)
	b = flag(b, `"queued":`, p.Queued)
	b = str(b, `"job_id":`, p.JobID)
	b = jsonenc.AppendString(name(b, `"call_id":`), p.CallID, true)
	return append(b, '}'), true
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// appendFloat writes f as encoding/json writes a float64: the shortest
// decimal, in exponent form below 1e-6 and from 1e21 on, with the
// exponent's leading zero dropped (1e-07 is 1e-7).
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
