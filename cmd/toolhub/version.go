package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

// printVersion prints the module version and the VCS revision the binary
// was built from, as the Go toolchain recorded them in the build info.
func printVersion(_ context.Context, _ []string, stdout, _ io.Writer) error {
	fmt.Fprintln(stdout, "toolhub", buildVersion())
	return nil
}

// buildVersion is "-ldflags -X main.version=…" when set, else the module
// version from the build info, followed by the VCS revision, its time and
// "+dirty" for a build from a modified tree:
//
//	v1.2.0 (revision 626ff61aff7d, 2026-12-03T08:00:00Z)
//	(devel) (revision 626ff61aff7d+dirty, 2026-12-03T08:00:00Z)
//
// Without a vcs.revision in the build info, the revision set with
// "-ldflags -X main.revision=…" stands in (make build sets it); a binary
// with neither (go build -buildvcs=false, a git worktree, no repository)
// says so instead of a revision.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{}
	}
	return formatVersion(version, revision, bi)
}

// formatVersion is buildVersion's text for the ldflags version and
// revision, and bi.
func formatVersion(version, ldRevision string, bi *debug.BuildInfo) string {
	v := version
	if v == "dev" && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	var rev, at, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if rev == "" {
		rev = ldRevision
	}
	if rev == "" {
		return v + " (no VCS revision: built with -buildvcs=false, in a git worktree or outside a repository; make build records it)"
	}
	out := v + " (revision " + rev + modified
	if at != "" {
		out += ", " + at
	}
	if bi.GoVersion != "" {
		out += ", " + bi.GoVersion
	}
	return out + ")"
}

// vcsRevision is the build info's vcs.revision, else the ldflags revision.
func vcsRevision(bi *debug.BuildInfo) string {
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return revision
}

// shortVersion is the version servers report (/healthz, MCP serverInfo,
// the start-up log): the module version, with the first 12 digits of the
// VCS revision when one was recorded.
func shortVersion() string {
	v := version
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	if rev := vcsRevision(bi); len(rev) >= 12 && v == "dev" {
		v += "+" + rev[:12]
	}
	return v
}
