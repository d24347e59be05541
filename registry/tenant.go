package registry

import (
	"fmt"
	"path"
)

// Tenant is a caller of toolhub (an orchestrator, an app, a team).
type Tenant struct {
	ID   string `json:"id" yaml:"id"`
	Name string `json:"name,omitempty" yaml:"name,omitempty"`
	// Tools lists the catalog names (glob patterns: "weather-a__*",
	// "image.*") the tenant may list and call; empty means all.
	Tools []string `json:"tools,omitempty" yaml:"tools,omitempty"`
	// Priority is "interactive" (default) or "batch".
	Priority string `json:"priority,omitempty" yaml:"priority,omitempty"`
	// DataLevel is the privacy level of the tenant's calls that do not
	// declare one (0 public … 3); see Vendor.MaxDataLevel.
	DataLevel int `json:"data_level,omitempty" yaml:"data_level,omitempty"`
}

// Validate checks a tenant spec.
func (t *Tenant) Validate() error {
	if err := ValidateTenantID(t.ID); err != nil {
		return err
	}
	for _, p := range t.Tools {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("tenant %q: tools pattern %q: %v", t.ID, p, err)
		}
	}
	if t.DataLevel < 0 || t.DataLevel > MaxDataLevel {
		return fmt.Errorf("tenant %q: data_level %d: want 0 to 3", t.ID, t.DataLevel)
	}
	switch t.Priority {
	case "", "interactive", "batch":
	default:
		return fmt.Errorf("tenant %q: priority %q: want interactive or batch", t.ID, t.Priority)
	}
	return nil
}

// Allows reports whether the tenant may see and call the named catalog entry.
// names are every name the entry answers to (e.g. "image.generate" and
// "image_generate").
func (t *Tenant) Allows(names ...string) bool {
	if len(t.Tools) == 0 {
		return true
	}
	for _, p := range t.Tools {
		for _, n := range names {
			if ok, _ := path.Match(p, n); ok {
				return true
			}
		}
	}
	return false
}
