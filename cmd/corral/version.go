package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Set by the Makefile: -ldflags "-X main.version=... -X main.commit=...".
var (
	version = ""
	commit  = ""
)

// buildInfo is what `corral version` prints.
type buildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
}

// currentBuild returns the version and commit set at link time, else the
// ones the Go toolchain recorded in the binary (module version, VCS
// revision), else "devel" and "unknown".
func currentBuild() buildInfo {
	b := buildInfo{Version: version, Commit: commit, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && b.Commit == "" {
				b.Commit = s.Value
			}
			if s.Key == "vcs.modified" && s.Value == "true" && b.Commit != "" && commit == "" {
				b.Commit += "-dirty"
			}
		}
	}
	if b.Version == "" {
		b.Version = "devel"
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	return b
}

func (b buildInfo) String() string {
	return fmt.Sprintf("corral %s (commit %s, %s)", b.Version, b.Commit, b.GoVersion)
}

func newVersionCmd(o *cliOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print corral's version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := currentBuild()
			if o.format == "json" {
				return o.render(cmd.OutOrStdout(), b, nil, nil)
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), b.String())
			return err
		},
	}
}
