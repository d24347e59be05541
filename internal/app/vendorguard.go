package app

import (
	"errors"
	"fmt"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/netguard"
	"github.com/toolhub/toolhub/registry"
)

// guardError turns the outbound guard's verdict on a vendor URL into the
// API's error: a refused address is forbidden; a name that does not
// resolve (now) is unavailable, not forbidden — nothing was refused.
func guardError(vendor string, err error) error {
	if errors.Is(err, netguard.ErrRefused) {
		return forbidden("vendor %q: %v", vendor, err)
	}
	return &hub.Error{Code: hub.CodeUnavailable, Vendor: vendor, Message: fmt.Sprintf("vendor %q: %v", vendor, err)}
}

// maskedHistory is a vendor's versions as the API shows them: header and
// env values (but the safe headers) and URL passwords masked, ${VAR}
// references kept ([registry.Vendor.Masked]).
func maskedHistory(h []registry.VendorRecord) []registry.VendorRecord {
	out := make([]registry.VendorRecord, len(h))
	for i, r := range h {
		r.Vendor = r.Vendor.Masked()
		out[i] = r
	}
	return out
}
