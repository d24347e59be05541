package billing

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Micros is an amount of money in millionths of the currency unit
// (1 USD = 1_000_000 micros). Money is never a float in toolhub.
type Micros int64

// MicrosPerUnit is how many micros make one currency unit.
const MicrosPerUnit = 1_000_000

// ParseMicros parses a decimal amount ("0.0025", "12", "-1.5") exactly,
// with at most 6 decimals.
func ParseMicros(s string) (Micros, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("billing: empty amount")
	}
	neg := false
	switch s[0] {
	case '-':
		neg, s = true, s[1:]
	case '+':
		s = s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" || len(frac) > 6 || strings.ContainsAny(whole+frac, "+-") {
		return 0, fmt.Errorf("billing: amount %q: want a decimal with at most 6 decimals, like 0.0025", s)
	}
	if whole == "" {
		whole = "0"
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > (1<<63-1)/MicrosPerUnit {
		return 0, fmt.Errorf("billing: amount %q: want a decimal with at most 6 decimals, like 0.0025", s)
	}
	var f int64
	if frac != "" {
		f, err = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("billing: amount %q: want a decimal with at most 6 decimals, like 0.0025", s)
		}
	}
	m := Micros(w*MicrosPerUnit + f)
	if neg {
		m = -m
	}
	return m, nil
}

// String formats m as a decimal with 6 decimals ("0.002500").
func (m Micros) String() string {
	sign := ""
	v := int64(m)
	if v < 0 {
		sign, v = "-", -v
	}
	return fmt.Sprintf("%s%d.%06d", sign, v/MicrosPerUnit, v%MicrosPerUnit)
}

// MarshalText writes m as a decimal string, so config files and JSON
// reports never carry a float.
func (m Micros) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads a decimal string (see [ParseMicros]).
func (m *Micros) UnmarshalText(b []byte) error {
	v, err := ParseMicros(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}
