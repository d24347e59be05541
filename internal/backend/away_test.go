package backend

import (
	"errors"
	"testing"
	"time"
)

// Health counts the time a store is away with the clock it is given.
func TestHealthDegradedTime(t *testing.T) {
	now := time.Unix(1000, 0)
	h := newHealth(func() time.Time { return now })
	h.track(StoreRedis)
	now = now.Add(3 * time.Second)
	if err := h.Away(); err == nil {
		t.Fatal("a store never seen up is not away")
	}
	h.set(StoreRedis, nil) // joined after 3 s
	now = now.Add(10 * time.Second)
	h.set(StoreRedis, errors.New("dial tcp: connection refused"))
	now = now.Add(2 * time.Second)
	st := h.States()
	if len(st) != 1 || st[0].Up || st[0].DegradedSeconds != 5 || st[0].LastError == "" {
		t.Errorf("states %+v; want redis away, 5 s degraded, the last error", st)
	}
	h.set(StoreRedis, nil)
	now = now.Add(time.Hour)
	if st := h.States(); !st[0].Up || st[0].DegradedSeconds != 5 || h.Away() != nil {
		t.Errorf("states %+v; want redis up, still 5 s degraded", st)
	}
}
