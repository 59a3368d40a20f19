package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/wire"
)

// hostActionCmd is `corral host drain|undrain|force-down NAME`.
func hostActionCmd(o *cliOpts, action, short string, call func(*client.Client, context.Context, string) (wire.HostView, error)) *cobra.Command {
	return &cobra.Command{
		Use:   action + " NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := call(o.client(), cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return o.renderFields(cmd.OutOrStdout(), wire.HostResponse{Host: h}, [][2]string{
				{"name", h.Name}, {"status", h.Status}, {"drained", strconv.FormatBool(h.Drained)},
				{"servers", strconv.Itoa(h.Servers)},
			})
		},
	}
}

func (o *cliOpts) renderOwner(cmd *cobra.Command, ow wire.OwnerView) error {
	return o.renderFields(cmd.OutOrStdout(), wire.OwnerResponse{Owner: ow}, [][2]string{
		{"server", ow.ServerID}, {"host", ow.Host}, {"host_up", strconv.FormatBool(ow.HostUp)},
		{"epoch", strconv.FormatUint(ow.Epoch, 10)}, {"set_at_index", strconv.FormatUint(ow.Index, 10)},
		{"reason", ow.Reason}, {"since", ow.Since}, {"status", ow.Status}, {"task_state", ow.Task}, {"node", ow.Node},
	})
}

func newServerOwnerCmd(o *cliOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "owner ID|NAME",
		Short: "Explain who owns a server: host, epoch, the log index that set it, and why",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := o.findServer(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			ow, err := o.client().ServerOwner(cmd.Context(), s.ID)
			if err != nil {
				return err
			}
			return o.renderOwner(cmd, ow)
		},
	}
}

func newServerMoveCmd(o *cliOpts) *cobra.Command {
	var host string
	cmd := &cobra.Command{
		Use:   "move ID|NAME --host HOST",
		Short: "Give a server to another host (the old owner is fenced out)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if host == "" {
				return &exitError{code: 2, err: fmt.Errorf("--host is required")}
			}
			s, err := o.findServer(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			ow, err := o.client().MoveServer(cmd.Context(), s.ID, host)
			if err != nil {
				return err
			}
			return o.renderOwner(cmd, ow)
		},
	}
	cmd.Flags().StringVar(&host, "host", "", "the new owner")
	return cmd
}

func newPlanCmd(o *cliOpts) *cobra.Command {
	c := &cobra.Command{Use: "plan", Short: "Dry runs of the leader's plans"}
	var host string
	rebalance := &cobra.Command{
		Use:   "rebalance --host HOST",
		Short: "Show what a host's death or drain would move now",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if host == "" {
				return &exitError{code: 2, err: fmt.Errorf("--host is required")}
			}
			resp, err := o.client().PlanRebalance(cmd.Context(), host)
			if err != nil {
				return err
			}
			var rows [][]string
			for _, m := range resp.Moves {
				rows = append(rows, []string{m.ServerID, m.FromHost, strconv.FormatUint(m.FromEpoch, 10), m.ToHost})
			}
			if err := o.render(cmd.OutOrStdout(), resp, []string{"Server", "From", "Epoch", "To"}, rows); err != nil || o.format == "json" {
				return err
			}
			var hosts []string
			for h := range resp.ServersAfter {
				hosts = append(hosts, h)
			}
			sort.Strings(hosts)
			var after [][]string
			for _, h := range hosts {
				after = append(after, []string{h, strconv.Itoa(resp.ServersAfter[h])})
			}
			fmt.Fprintln(cmd.OutOrStdout(), "\nServers per host after the plan:")
			return o.render(cmd.OutOrStdout(), nil, []string{"Host", "Servers"}, after)
		},
	}
	rebalance.Flags().StringVar(&host, "host", "", "host whose death or drain to plan")
	c.AddCommand(rebalance)
	return c
}
