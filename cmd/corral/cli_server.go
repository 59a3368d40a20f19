package main

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/wire"
)

func newServerCmd(o *cliOpts) *cobra.Command {
	c := &cobra.Command{Use: "server", Short: "Server commands (Nova-compatible bare-metal servers)"}
	c.AddCommand(newServerCreateCmd(o), newServerListCmd(o), newServerShowCmd(o), newServerDeleteCmd(o),
		newServerOwnerCmd(o), newServerMoveCmd(o))
	return c
}

func newServerCreateCmd(o *cliOpts) *cobra.Command {
	var flavor, image string
	var networks []string
	var wait bool
	cmd := &cobra.Command{
		Use:   "create NAME --flavor ID|NAME --image IMAGE",
		Short: "Boot a bare-metal server",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if flavor == "" || image == "" {
				return &exitError{code: 2, err: fmt.Errorf("--flavor and --image are required")}
			}
			f, err := o.findFlavor(cmd.Context(), flavor)
			if err != nil {
				return err
			}
			// Without --network, "auto" as the openstack CLI sends it: the
			// microversion the CLI speaks requires networks (2.37+).
			body := wire.ServerCreate{Name: args[0], FlavorRef: f.ID, ImageRef: image, Networks: wire.NetworksAuto}
			if len(networks) > 0 {
				body.Networks = wire.Networks(networks...)
			}
			created, err := o.client().CreateServer(cmd.Context(), body)
			if err != nil {
				return err
			}
			id := created.ID
			if wait {
				if err := o.waitServer(cmd.Context(), id, func(s wire.Server) bool { return s.Status != "BUILD" }); err != nil {
					return err
				}
			}
			s, err := o.client().GetServer(cmd.Context(), id)
			if err != nil {
				return err
			}
			return o.showServer(cmd, s)
		},
	}
	f := cmd.Flags()
	f.StringVar(&flavor, "flavor", "", "flavor id or name")
	f.StringVar(&image, "image", "", "image to deploy (Ironic image_source)")
	f.StringArrayVar(&networks, "network", nil, "network UUID to attach (repeatable)")
	f.BoolVar(&wait, "wait", false, "wait until the server leaves BUILD")
	return cmd
}

// findServer resolves an id or, failing that, a unique name.
func (o *cliOpts) findServer(ctx context.Context, ref string) (wire.Server, error) {
	cl := o.client()
	s, err := cl.GetServer(ctx, ref)
	if err == nil || !client.IsStatus(err, http.StatusNotFound) {
		return s, err
	}
	all, err := cl.ListServers(ctx, client.ServerQuery{})
	if err != nil {
		return wire.Server{}, err
	}
	var found []wire.Server
	for _, s := range all {
		if s.Name == ref {
			found = append(found, s)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return wire.Server{}, &exitError{code: 1, err: fmt.Errorf("no server with id or name %q", ref)}
	}
	return wire.Server{}, &exitError{code: 1, err: fmt.Errorf("%d servers are named %q: use the id", len(found), ref)}
}

func (o *cliOpts) waitServer(ctx context.Context, id string, done func(wire.Server) bool) error {
	cl := o.client()
	deadline := time.Now().Add(30 * time.Minute)
	for time.Now().Before(deadline) {
		s, err := cl.GetServer(ctx, id)
		if client.IsStatus(err, http.StatusNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if done(s) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("server %s: gave up waiting", id)
}

func (o *cliOpts) showServer(cmd *cobra.Command, s wire.Server) error {
	keys := make([]string, 0, len(s.Flavor.ExtraSpecs))
	for k := range s.Flavor.ExtraSpecs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var specs []string
	for _, k := range keys {
		specs = append(specs, k+"="+s.Flavor.ExtraSpecs[k])
	}
	var nets []string
	for n := range s.Addresses {
		nets = append(nets, n)
	}
	sort.Strings(nets)
	fault := ""
	if s.Fault != nil {
		fault = fmt.Sprintf("%d: %s", s.Fault.Code, s.Fault.Message)
	}
	return o.renderFields(cmd.OutOrStdout(), map[string]any{"server": s}, [][2]string{
		{"id", s.ID}, {"name", s.Name}, {"status", s.Status}, {"task_state", s.TaskState},
		{"host", s.Host}, {"node", s.Node}, {"image", s.Image.ID},
		{"flavor", fmt.Sprintf("%s (vcpus %d, ram %d, disk %d)", s.Flavor.OriginalName, s.Flavor.VCPUs, s.Flavor.RAM, s.Flavor.Disk)},
		{"flavor:extra_specs", strings.Join(specs, ", ")}, {"networks", strings.Join(nets, ", ")},
		{"fault", fault}, {"created", s.Created}, {"updated", s.Updated},
	})
}

func newServerListCmd(o *cliOpts) *cobra.Command {
	var status, host string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List servers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			servers, err := o.client().ListServers(cmd.Context(), client.ServerQuery{Status: status, Host: host})
			if err != nil {
				return err
			}
			resp := wire.ServersResponse{Servers: servers}
			var rows [][]string
			for _, s := range resp.Servers {
				rows = append(rows, []string{s.ID, s.Name, s.Status, s.TaskState, s.Flavor.OriginalName, s.Host, s.Node})
			}
			return o.render(cmd.OutOrStdout(), resp, []string{"ID", "Name", "Status", "Task", "Flavor", "Host", "Node"}, rows)
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "only servers with this status")
	cmd.Flags().StringVar(&host, "host", "", "only servers owned by this host")
	return cmd
}

func newServerShowCmd(o *cliOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID|NAME",
		Short: "Show a server, with the flavor embedded in it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := o.findServer(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return o.showServer(cmd, s)
		},
	}
}

func newServerDeleteCmd(o *cliOpts) *cobra.Command {
	var wait bool
	cmd := &cobra.Command{
		Use:   "delete ID|NAME...",
		Short: "Delete servers",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, ref := range args {
				s, err := o.findServer(cmd.Context(), ref)
				if err != nil {
					return err
				}
				if err := o.client().DeleteServer(cmd.Context(), s.ID); err != nil {
					return err
				}
				if wait {
					if err := o.waitServer(cmd.Context(), s.ID, func(wire.Server) bool { return false }); err != nil {
						return err
					}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleting server %s (%s)\n", s.ID, s.Name)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the servers are gone")
	return cmd
}

func newNodeCmd(o *cliOpts) *cobra.Command {
	c := &cobra.Command{Use: "node", Short: "Ironic node mirror commands"}
	c.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the Ironic nodes as the cluster mirrors them",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			nodes, err := o.client().ListNodes(cmd.Context())
			if err != nil {
				return err
			}
			resp := wire.NodesResponse{Nodes: nodes}
			var rows [][]string
			for _, n := range resp.Nodes {
				rows = append(rows, []string{n.UUID, n.Name, n.ResourceClass, n.ProvisionState, n.PowerState,
					strconv.FormatBool(n.Maintenance), n.InstanceUUID, n.ReservedBy, strconv.FormatBool(n.Missing)})
			}
			return o.render(cmd.OutOrStdout(), resp, []string{"UUID", "Name", "Resource Class", "Provision", "Power",
				"Maintenance", "Instance", "Reserved By", "Missing"}, rows)
		},
	})
	return c
}
