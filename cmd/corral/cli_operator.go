package main

import (
	"fmt"
	"net/http"
	"os"

	"github.com/spf13/cobra"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/cluster"
)

func newOperatorCmd(o *cliOpts) *cobra.Command {
	cmd := &cobra.Command{Use: "operator", Short: "Repair the raft configuration (see docs/operations.md)"}
	r := &cobra.Command{Use: "raft", Short: "Operate on the raft configuration"}
	r.AddCommand(&cobra.Command{
		Use:   "remove-peer NAME",
		Short: "Remove a dead peer from the raft configuration",
		Long: `Remove a peer that is gone for good from the raft configuration, at once
(the leader does it by itself after [raft] dead_server_cleanup_after). A
peer that gossip shows alive is refused: stop it first, or run
` + "`corral leave`" + ` on it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := o.client().Do(cmd.Context(), http.MethodPost, api.RemovePeerPath, api.RemovePeerRequest{Name: args[0]}, nil)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %s from the raft configuration\n", args[0])
			return nil
		},
	})
	cmd.AddCommand(r, newRecoverCmd())
	return cmd
}

func newRecoverCmd() *cobra.Command {
	var name, dataDir, bind string
	var raftPort int
	cmd := &cobra.Command{
		Use:   "recover",
		Short: "Rebuild a cluster that lost its quorum from one survivor's data dir (agent stopped)",
		Long: `Make the peer whose data dir is given the only voter of its raft
configuration, keeping every entry of its log. Use it when a majority of
the voters is lost for good and the cluster cannot elect a leader. Stop
every agent first; run this on the survivor with the name, data dir, bind
address and raft port its agent uses; start the survivor; then start the
other peers on empty data dirs: they join and catch up as non-voters, then
vote. Writes that only the lost peers had are lost. See docs/operations.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" || dataDir == "" {
				return &exitError{code: 2, err: fmt.Errorf("--name and --data-dir are required: the survivor's, as its agent is configured")}
			}
			logger := newLogger("warn", "text", os.Stderr)
			st, err := cluster.Recover(cluster.Config{Name: name, DataDir: dataDir, BindAddr: bind, RaftPort: raftPort, Logger: logger})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "recovered %s: %s is the only voter (log up to index %d, state applied up to %d).\nStart its agent, then the other peers on empty data dirs.\n",
				dataDir, name, st.LastIndex, st.AppliedIndex)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "the survivor's peer name")
	f.StringVar(&dataDir, "data-dir", "", "the survivor's data dir")
	f.StringVar(&bind, "bind", "127.0.0.1", "the survivor's bind address")
	f.IntVar(&raftPort, "raft-port", defaultRaftPort, "the survivor's raft port")
	return cmd
}
