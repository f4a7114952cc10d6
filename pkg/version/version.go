// Package version reports which source a Dovetail binary was built from.
package version

import "runtime/debug"

// commit is set at link time by `make image` (-ldflags "-X github.com/dovetail/dovetail/pkg/version.commit=<sha>").
// It is a string the linker writes, never assigned at run time.
var commit string

// Commit is the git commit the binary was built from: the linker-stamped value when present (release images),
// else the VCS revision `go build` records (with "-dirty" for a modified tree), else "unknown".
func Commit() string {
	if commit != "" {
		return commit
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// Version is the version of the main module the binary was built as: a release tag when it was built from the
// module proxy's copy, else "unknown" (a build from a source tree records no version).
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok || info.Main.Version == "" || info.Main.Version == "(devel)" {
		return "unknown"
	}
	return info.Main.Version
}
