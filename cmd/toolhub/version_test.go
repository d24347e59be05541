package main

import (
	"runtime/debug"
	"testing"
)

func TestFormatVersion(t *testing.T) {
	stamped := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "626ff61aff7d46b66c23968bf41bd97c6c2a15a6"},
		{Key: "vcs.time", Value: "2026-12-03T08:00:00Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	tests := []struct {
		name, ld, ldRev string
		bi              *debug.BuildInfo
		want            string
	}{
		{"stamped", "dev", "", stamped, "v1.4.0 (revision 626ff61aff7d46b66c23968bf41bd97c6c2a15a6+dirty, 2026-12-03T08:00:00Z, go1.26.8)"},
		{"ldflags version wins", "v2.0.0", "", stamped, "v2.0.0 (revision 626ff61aff7d46b66c23968bf41bd97c6c2a15a6+dirty, 2026-12-03T08:00:00Z, go1.26.8)"},
		{"build info revision wins", "dev", "1111111111111111111111111111111111111111", stamped, "v1.4.0 (revision 626ff61aff7d46b66c23968bf41bd97c6c2a15a6+dirty, 2026-12-03T08:00:00Z, go1.26.8)"},
		{"ldflags revision stands in", "dev", "626ff61aff7d46b66c23968bf41bd97c6c2a15a6", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "(devel) (revision 626ff61aff7d46b66c23968bf41bd97c6c2a15a6, go1.26.8)"},
		{"not stamped", "dev", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "(devel) (no VCS revision: built with -buildvcs=false, in a git worktree or outside a repository; make build records it)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatVersion(tt.ld, tt.ldRev, tt.bi); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
