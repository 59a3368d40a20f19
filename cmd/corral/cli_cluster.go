package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/wire"
)

func newMembersCmd(o *cliOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "members",
		Short: "List the peers: gossip status and raft role",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			members, err := o.client().Members(cmd.Context())
			if err != nil {
				return err
			}
			resp := wire.MembersResponse{Members: members}
			var rows [][]string
			for _, m := range resp.Members {
				leader := ""
				if m.Raft.Leader {
					leader = "*"
				}
				rows = append(rows, []string{m.Name, m.Address, m.Status, m.Kind, m.Raft.Suffrage, leader, m.APIAddr, m.Version, m.Commands})
			}
			return o.render(cmd.OutOrStdout(), resp, []string{"Name", "Gossip", "Status", "Kind", "Raft", "Leader", "API", "Version", "Commands"}, rows)
		},
	}
}

func newRaftCmd(o *cliOpts) *cobra.Command {
	c := &cobra.Command{Use: "raft", Short: "Raft commands"}
	c.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "Show this peer's view of raft",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := o.client().RaftStatus(cmd.Context())
			if err != nil {
				return err
			}
			u := func(v uint64) string { return strconv.FormatUint(v, 10) }
			return o.renderFields(cmd.OutOrStdout(), st, [][2]string{
				{"peer", st.Name}, {"state", st.State}, {"leader", st.Leader}, {"term", u(st.Term)},
				{"commit_index", u(st.CommitIndex)}, {"applied_index", u(st.AppliedIndex)},
				{"last_snapshot_index", u(st.LastSnapshotIndex)}, {"last_contact", st.LastContact},
				{"voters", strings.Join(st.Voters, ", ")}, {"nonvoters", strings.Join(st.Nonvoters, ", ")},
			})
		},
	})
	return c
}

func newHostCmd(o *cliOpts) *cobra.Command {
	c := &cobra.Command{Use: "host", Short: "Compute host commands"}
	c.AddCommand(hostActionCmd(o, "drain", "Stop placing servers on a host and move its servers away", (*client.Client).DrainHost),
		hostActionCmd(o, "undrain", "Let a drained host take servers again", (*client.Client).UndrainHost),
		hostActionCmd(o, "force-down", "Mark a host known to be dead down now; its servers move", (*client.Client).ForceDownHost))
	c.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List compute hosts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			resp, err := o.client().ListHosts(cmd.Context())
			if err != nil {
				return err
			}
			var rows [][]string
			for _, h := range resp.Hosts {
				rows = append(rows, []string{h.Name, h.Kind, h.Status, strconv.Itoa(h.Servers), h.APIAddr,
					h.ChangedAt.Format("2006-01-02T15:04:05Z")})
			}
			if err := o.render(cmd.OutOrStdout(), resp, []string{"Name", "Kind", "Status", "Servers", "API", "Changed"}, rows); err != nil || o.format == "json" {
				return err
			}
			var cap [][]string
			for _, c := range resp.Capacity {
				cap = append(cap, []string{c.ResourceClass, c.IronicClass, strconv.Itoa(c.Total), strconv.Itoa(c.Used),
					strconv.Itoa(c.Free), strconv.Itoa(c.Unavailable)})
			}
			fmt.Fprintln(cmd.OutOrStdout(), "\nBare-metal capacity (whole cloud):")
			return o.render(cmd.OutOrStdout(), nil, []string{"Resource Class", "Ironic Class", "Total", "Used", "Free", "Unavailable"}, cap)
		},
	}, &cobra.Command{
		Use:   "show NAME",
		Short: "Show one compute host",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := o.client().GetHost(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return o.renderFields(cmd.OutOrStdout(), wire.HostResponse{Host: h}, [][2]string{
				{"name", h.Name}, {"kind", h.Kind}, {"status", h.Status}, {"api_address", h.APIAddr},
				{"raft_address", h.RaftAddr}, {"gossip_address", h.GossipAddr},
				{"joined_at", h.JoinedAt.String()}, {"changed_at", h.ChangedAt.String()},
			})
		},
	})
	return c
}

func newLeaveCmd(o *cliOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "leave",
		Short: "Make the peer at --addr leave the cluster cleanly and exit",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			resp, err := o.client().Leave(cmd.Context())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "peer %s is leaving the cluster\n", resp.Peer)
			return nil
		},
	}
}
