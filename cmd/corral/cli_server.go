package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/client"
)

const serversPath = "/compute/v2.1/servers"

// novaServer is the subset of Nova's server view the CLI shows.
type novaServer struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Status    string `json:"status"`
	TaskState string `json:"OS-EXT-STS:task_state"`
	Host      string `json:"OS-EXT-SRV-ATTR:host"`
	Node      string `json:"OS-EXT-SRV-ATTR:hypervisor_hostname"`
	Created   string `json:"created"`
	Updated   string `json:"updated"`
	Image     struct {
		ID string `json:"id"`
	} `json:"image"`
	Flavor struct {
		OriginalName string            `json:"original_name"`
		VCPUs        int               `json:"vcpus"`
		RAM          int               `json:"ram"`
		Disk         int               `json:"disk"`
		ExtraSpecs   map[string]string `json:"extra_specs"`
	} `json:"flavor"`
	Addresses map[string]any `json:"addresses"`
	Fault     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"fault"`
}

// serverClient asks for microversion 2.47, which shows the embedded flavor.
func (o *cliOpts) serverDo(ctx context.Context, method, path string, in, out any) error {
	c := o.client()
	c.Headers = map[string]string{"OpenStack-API-Version": "compute 2.47"}
	if method == http.MethodGet && o.consistency != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "consistency=" + url.QueryEscape(o.consistency)
	}
	return c.Do(ctx, method, path, in, out)
}

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
			body := map[string]any{"name": args[0], "flavorRef": f.ID, "imageRef": image, "networks": "auto"}
			if len(networks) > 0 {
				var nets []map[string]string
				for _, n := range networks {
					nets = append(nets, map[string]string{"uuid": n})
				}
				body["networks"] = nets
			}
			var resp struct {
				Server struct {
					ID string `json:"id"`
				} `json:"server"`
			}
			if err := o.serverDo(cmd.Context(), http.MethodPost, serversPath, map[string]any{"server": body}, &resp); err != nil {
				return err
			}
			id := resp.Server.ID
			if wait {
				if err := o.waitServer(cmd.Context(), id, func(s novaServer) bool { return s.Status != "BUILD" }); err != nil {
					return err
				}
			}
			s, err := o.getServer(cmd.Context(), id)
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

func (o *cliOpts) getServer(ctx context.Context, id string) (novaServer, error) {
	var resp struct {
		Server novaServer `json:"server"`
	}
	err := o.serverDo(ctx, http.MethodGet, serversPath+"/"+url.PathEscape(id), nil, &resp)
	return resp.Server, err
}

// findServer resolves an id or, failing that, a unique name.
func (o *cliOpts) findServer(ctx context.Context, ref string) (novaServer, error) {
	s, err := o.getServer(ctx, ref)
	if err == nil || !client.IsStatus(err, http.StatusNotFound) {
		return s, err
	}
	var all struct {
		Servers []novaServer `json:"servers"`
	}
	if err := o.serverDo(ctx, http.MethodGet, serversPath+"/detail", nil, &all); err != nil {
		return novaServer{}, err
	}
	var found []novaServer
	for _, s := range all.Servers {
		if s.Name == ref {
			found = append(found, s)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return novaServer{}, &exitError{code: 1, err: fmt.Errorf("no server with id or name %q", ref)}
	}
	return novaServer{}, &exitError{code: 1, err: fmt.Errorf("%d servers are named %q: use the id", len(found), ref)}
}

func (o *cliOpts) waitServer(ctx context.Context, id string, done func(novaServer) bool) error {
	deadline := time.Now().Add(30 * time.Minute)
	for time.Now().Before(deadline) {
		s, err := o.getServer(ctx, id)
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

func (o *cliOpts) showServer(cmd *cobra.Command, s novaServer) error {
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
			q := url.Values{}
			if status != "" {
				q.Set("status", status)
			}
			if host != "" {
				q.Set("host", host)
			}
			path := serversPath + "/detail"
			if len(q) > 0 {
				path += "?" + q.Encode()
			}
			var resp struct {
				Servers []novaServer `json:"servers"`
			}
			if err := o.serverDo(cmd.Context(), http.MethodGet, path, nil, &resp); err != nil {
				return err
			}
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
				if err := o.serverDo(cmd.Context(), http.MethodDelete, serversPath+"/"+url.PathEscape(s.ID), nil, nil); err != nil {
					return err
				}
				if wait {
					if err := o.waitServer(cmd.Context(), s.ID, func(novaServer) bool { return false }); err != nil {
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
			var resp struct {
				Nodes []api.NodeView `json:"nodes"`
			}
			if err := o.get(cmd.Context(), "/v1/nodes", &resp); err != nil {
				return err
			}
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
