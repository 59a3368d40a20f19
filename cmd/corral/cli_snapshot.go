package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/cluster"
)

func newSnapshotCmd(o *cliOpts) *cobra.Command {
	cmd := &cobra.Command{Use: "snapshot", Short: "Back up and restore the replicated state (see docs/operations.md)"}
	save := &cobra.Command{
		Use:   "save FILE",
		Short: "Save a consistent snapshot of the replicated state, taken by the leader",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, _, err := o.client().Raw(cmd.Context(), http.MethodGet, api.SnapshotPath, nil)
			if err != nil {
				return err
			}
			h, _, _, err := cluster.ReadSnapshotFile(bytes.NewReader(raw))
			if err != nil {
				return fmt.Errorf("the snapshot received is unusable, nothing written: %w", err)
			}
			tmp, err := os.CreateTemp(filepath.Dir(args[0]), ".corral-snapshot-*")
			if err != nil {
				return fmt.Errorf("write %s: %w", args[0], err)
			}
			defer os.Remove(tmp.Name())
			if _, err := tmp.Write(raw); err != nil {
				_ = tmp.Close()
				return fmt.Errorf("write %s: %w", args[0], err)
			}
			if err := tmp.Sync(); err != nil {
				_ = tmp.Close()
				return fmt.Errorf("write %s: %w", args[0], err)
			}
			if err := tmp.Close(); err != nil {
				return fmt.Errorf("write %s: %w", args[0], err)
			}
			if err := os.Rename(tmp.Name(), args[0]); err != nil {
				return fmt.Errorf("write %s: %w", args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "saved %s: index %d, term %d, %d bytes, sha256 %s\n", args[0], h.Index, h.Term, h.Size, h.SHA256)
			return nil
		},
	}
	inspect := &cobra.Command{
		Use:   "inspect FILE",
		Short: "Check a snapshot file and show what it holds",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			defer f.Close()
			h, _, st, err := cluster.ReadSnapshotFile(f)
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("%s: %w", args[0], err)}
			}
			view := struct {
				cluster.SnapshotHeader
				Hosts        int `json:"hosts"`
				Servers      int `json:"servers"`
				Flavors      int `json:"flavors"`
				Nodes        int `json:"nodes"`
				Reservations int `json:"reservations"`
			}{h, len(st.Hosts()), len(st.Servers()), len(st.Flavors()), len(st.Nodes()), len(st.Reservations())}
			if o.format == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(view)
			}
			return o.renderFields(cmd.OutOrStdout(), view, [][2]string{
				{"Index", fmt.Sprint(h.Index)}, {"Term", fmt.Sprint(h.Term)}, {"Size", fmt.Sprint(h.Size)},
				{"SHA256", h.SHA256}, {"Digest", h.Digest}, {"Taken at", h.TakenAt.Format(time.RFC3339)},
				{"Taken by", h.TakenBy}, {"Hosts", fmt.Sprint(view.Hosts)}, {"Servers", fmt.Sprint(view.Servers)},
				{"Flavors", fmt.Sprint(view.Flavors)}, {"Nodes", fmt.Sprint(view.Nodes)}, {"Reservations", fmt.Sprint(view.Reservations)},
			})
		},
	}
	restore := &cobra.Command{
		Use:   "restore FILE",
		Short: "Replace the replicated state of the running cluster with a snapshot",
		Long: `Replace the whole replicated state of the running cluster with the snapshot
in FILE. The file is checked first (format, size, checksum, readable state):
a bad file is refused and nothing changes. Every write since the snapshot
is lost: use it for disaster recovery into a new cluster.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := os.ReadFile(args[0])
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			if _, _, _, err := cluster.ReadSnapshotFile(bytes.NewReader(raw)); err != nil {
				return &exitError{code: 1, err: fmt.Errorf("%s: %w; nothing was changed", args[0], err)}
			}
			out, _, err := o.client().Raw(cmd.Context(), http.MethodPost, api.SnapshotPath, bytes.NewReader(raw))
			if err != nil {
				return err
			}
			var h cluster.SnapshotHeader
			if err := json.Unmarshal(out, &h); err != nil {
				return fmt.Errorf("unreadable answer to the restore: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "restored %s: index %d taken at %s by %s\n", args[0], h.Index, h.TakenAt.Format(time.RFC3339), h.TakenBy)
			return nil
		},
	}
	cmd.AddCommand(save, inspect, restore)
	return cmd
}
