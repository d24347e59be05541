package main

import (
	"strings"
	"testing"
)

func TestDrillRefusesUnknownFaultsBeforeRunningAny(t *testing.T) {
	out, code := runCmd(t, "drill", "--faults", "fail,redis,nope")
	if code == 0 || !strings.Contains(out, "nope") || strings.Contains(out, "primary fail") {
		t.Errorf("drill --faults fail,redis,nope: exit %d, output %q", code, out)
	}
}
