package servers

import "github.com/toolhub/toolhub/hub/vendorconn"

// Backoff bounds the waits between reconnects of one vendor: the n-th
// wait in a row is about Min·2ⁿ, never over Max, jittered. It is the
// lifecycle A2A vendors share ([vendorconn.Backoff]).
type Backoff = vendorconn.Backoff
