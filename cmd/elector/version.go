package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// buildVersion says which build a binary is.
type buildVersion struct {
	// Version is the release: the one set at link time (-X main.version),
	// else the module version `go install …@v1.2.3` recorded, else "dev".
	Version string
	// Revision and Time are the VCS commit the binary was built from and
	// its time, when the build recorded them (a build in a git checkout);
	// Modified says the checkout had uncommitted changes.
	Revision string
	Time     string
	Modified bool
}

// readBuildVersion derives the build's version from the linked version
// and the build information the Go toolchain embeds (ok false: none).
func readBuildVersion(linked string, bi *debug.BuildInfo, ok bool) buildVersion {
	v := buildVersion{Version: linked}
	if !ok || bi == nil {
		return v
	}
	if (v.Version == "" || v.Version == "dev") && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// currentVersion is this binary's buildVersion.
func currentVersion() buildVersion {
	bi, ok := debug.ReadBuildInfo()
	return readBuildVersion(version, bi, ok)
}

// String is the version with the commit it was built from, if known:
// "v1.2.3", "dev (commit 0123456789ab, 2026-11-22T10:00:00Z, modified)".
func (v buildVersion) String() string {
	var extra []string
	if v.Revision != "" {
		rev := v.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		extra = append(extra, "commit "+rev)
	}
	if v.Time != "" {
		extra = append(extra, v.Time)
	}
	if v.Modified {
		extra = append(extra, "modified")
	}
	if len(extra) == 0 {
		return v.Version
	}
	return fmt.Sprintf("%s (%s)", v.Version, strings.Join(extra, ", "))
}

// versionLine is what `elector version` prints.
func versionLine() string {
	return fmt.Sprintf("elector %s %s %s/%s\n", currentVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
