package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/corral-dev/corral/fsm"
)

// Set by the Makefile: -ldflags "-X main.version=... -X main.commit=...".
var (
	version = ""
	commit  = ""
)

// buildInfo is what `corral version` prints: the release and commit, and
// what this binary writes that older ones may not read (the command types
// it can apply and the snapshot formats it writes), which a rolling upgrade
// and CHANGELOG.md speak of.
type buildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
	// Commands lists the command types this binary applies (the list it
	// advertises in gossip), HighestCommand the highest of them.
	Commands       string `json:"command_types"`
	HighestCommand int    `json:"highest_command_type"`
	// SnapshotFormat is the highest snapshot format this binary reads and
	// writes; it writes SnapshotFormatBase while no state needs more.
	SnapshotFormat     int `json:"snapshot_format"`
	SnapshotFormatBase int `json:"snapshot_format_base"`
	// Encodings are the log entry encodings this binary reads (the list
	// it advertises in gossip); it writes the newest every peer reads.
	Encodings []string `json:"entry_encodings"`
}

// currentBuild returns the version and commit set at link time, else the
// ones the Go toolchain recorded in the binary (module version, VCS
// revision), else "devel" and "unknown".
func currentBuild() buildInfo {
	types := fsm.CommandTypes()
	b := buildInfo{Version: version, Commit: commit, GoVersion: runtime.Version(),
		Commands: fsm.KnownCommands(), HighestCommand: int(types[len(types)-1]),
		SnapshotFormat: fsm.SnapshotVersion, SnapshotFormatBase: fsm.SnapshotVersionBase}
	for _, e := range fsm.Encodings() {
		b.Encodings = append(b.Encodings, e.String())
	}
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
	return fmt.Sprintf("corral %s (commit %s, %s)\n"+
		"command types: %s (highest %d)\n"+
		"snapshot format: %d (written only when the state needs it, else %d; reads 1-%d)\n"+
		"entry encodings: %s (the newest written once every peer reads it)",
		b.Version, b.Commit, b.GoVersion, b.Commands, b.HighestCommand,
		b.SnapshotFormat, b.SnapshotFormatBase, b.SnapshotFormat, strings.Join(b.Encodings, ", "))
}

func newVersionCmd(o *cliOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print corral's version, commit, Go version, command types, snapshot format and entry encodings",
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
