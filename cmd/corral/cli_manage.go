package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/wire"
)

// Exit codes of the Ironic flavor migration, as nova-manage's.
const (
	migrateDone       = 0
	migrateNotFound   = 1
	migrateMultiple   = 2
	migrateBadArgs    = 3
	migrateBatchLimit = 500
)

func newManageCmd(o *cliOpts) *cobra.Command {
	c := &cobra.Command{Use: "manage", Short: "Operator maintenance tasks"}
	var rc, host, node string
	var all, dryRun bool
	var batch int
	mig := &cobra.Command{
		Use:   "ironic-flavor-migration --resource-class RC (--all | --host H [--node N]) [--dry-run]",
		Short: "Rewrite bare-metal servers' embedded flavors to ask for their node's custom class alone",
		Long: `Online Ironic flavor migration: for each bare-metal server in scope, its embedded
flavor gains resources:CUSTOM_<RC>=1 and zeroes VCPU, MEMORY_MB and DISK_GB, and its
allocations become the one unit of the custom class on its node, a batch at a time
through the replicated log. Idempotent. Afterwards the standard inventory can be
removed ([workarounds] report_ironic_standard_resource_class_inventory = false)
without a conflict. Exit codes as nova-manage's: 0 done, 1 nothing found, 2 more
than one server on a node, 3 bad arguments.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case rc == "":
				return &exitError{code: migrateBadArgs, err: errors.New("--resource-class is required")}
			case all == (host != ""):
				return &exitError{code: migrateBadArgs, err: errors.New("give either --all or --host (and optionally --node)")}
			case node != "" && host == "":
				return &exitError{code: migrateBadArgs, err: errors.New("--node needs --host")}
			case batch < 1 || batch > migrateBatchLimit:
				return &exitError{code: migrateBadArgs, err: fmt.Errorf("--batch-size must be 1..%d", migrateBatchLimit)}
			}
			cl := o.client()
			sel, err := cl.SelectFlavorMigration(cmd.Context(), wire.MigrationRequest{ResourceClass: rc, All: all, Host: host, Node: node})
			switch {
			case client.IsStatus(err, http.StatusNotFound):
				return &exitError{code: migrateNotFound, err: err}
			case client.IsStatus(err, http.StatusConflict):
				return &exitError{code: migrateMultiple, err: err}
			case client.IsStatus(err, http.StatusBadRequest):
				return &exitError{code: migrateBadArgs, err: err}
			case err != nil:
				return err
			}
			var todo []string
			for _, s := range sel.Servers {
				if !s.Migrated {
					todo = append(todo, s.ID)
				}
			}
			out := cmd.OutOrStdout()
			if dryRun {
				rows := make([][]string, 0, len(sel.Servers))
				for _, s := range sel.Servers {
					rows = append(rows, []string{s.ID, s.Name, s.Host, s.Node, strconv.FormatBool(s.Migrated)})
				}
				if err := o.render(out, sel, []string{"Server", "Name", "Host", "Node", "Migrated"}, rows); err != nil {
					return err
				}
				fmt.Fprintf(out, "dry run: %d of %d servers would be migrated to %s\n", len(todo), len(sel.Servers), sel.ResourceClass)
				return nil
			}
			bar := progressbar.NewOptions(len(todo), progressbar.OptionSetWriter(cmd.ErrOrStderr()),
				progressbar.OptionSetDescription("migrating flavors"), progressbar.OptionShowCount())
			done := 0
			for len(todo) > 0 {
				k := min(batch, len(todo))
				res, err := cl.MigrateFlavors(cmd.Context(), rc, todo[:k])
				if err != nil {
					return fmt.Errorf("after %d servers migrated: %w", done, err)
				}
				done += res.Migrated
				todo = todo[k:]
				_ = bar.Add(k)
			}
			_ = bar.Finish()
			fmt.Fprintf(out, "\nmigrated %d servers to %s (%d already were, %d in scope)\n", done, sel.ResourceClass,
				len(sel.Servers)-done, len(sel.Servers))
			return nil
		},
	}
	f := mig.Flags()
	f.StringVar(&rc, "resource-class", "", "Ironic resource class of the nodes (baremetal-gold) or its Placement name")
	f.BoolVar(&all, "all", false, "every bare-metal server of that class")
	f.StringVar(&host, "host", "", "only the servers of this compute host")
	f.StringVar(&node, "node", "", "only the server on this Ironic node (with --host)")
	f.BoolVar(&dryRun, "dry-run", false, "show what would be migrated")
	f.IntVar(&batch, "batch-size", 50, "servers per log entry")
	c.AddCommand(mig, newBaremetalFlavorUpdateCmd(o), newBaremetalMigrateCmd(o))
	return c
}

func newProviderCmd(o *cliOpts) *cobra.Command {
	c := &cobra.Command{Use: "provider", Short: "Placement resource providers (read only)"}
	c.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List resource providers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var resp struct {
				Providers []map[string]any `json:"resource_providers"`
			}
			if err := o.get(cmd.Context(), "/placement/resource_providers", &resp); err != nil {
				return err
			}
			var rows [][]string
			for _, p := range resp.Providers {
				rows = append(rows, []string{fmt.Sprint(p["uuid"]), fmt.Sprint(p["name"]), fmt.Sprint(p["generation"])})
			}
			return o.render(cmd.OutOrStdout(), resp, []string{"UUID", "Name", "Generation"}, rows)
		},
	}, providerSub(o, "show", "Show a resource provider", ""),
		providerSub(o, "inventory", "Show a provider's inventories", "/inventories"),
		providerSub(o, "usage", "Show a provider's usages", "/usages"))
	return c
}

func providerSub(o *cliOpts, use, short, suffix string) *cobra.Command {
	return &cobra.Command{
		Use:   use + " UUID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var resp map[string]any
			if err := o.get(cmd.Context(), "/placement/resource_providers/"+url.PathEscape(args[0])+suffix, &resp); err != nil {
				return err
			}
			var fields [][2]string
			flatten("", resp, &fields)
			sort.Slice(fields, func(i, j int) bool { return fields[i][0] < fields[j][0] })
			return o.renderFields(cmd.OutOrStdout(), resp, fields)
		},
	}
}

// flatten turns nested JSON into dotted field rows.
func flatten(prefix string, v any, out *[][2]string) {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			flatten(key, x, out)
		}
	case []any:
		var parts []string
		for _, x := range t {
			parts = append(parts, fmt.Sprint(x))
		}
		*out = append(*out, [2]string{prefix, strings.Join(parts, ", ")})
	default:
		*out = append(*out, [2]string{prefix, fmt.Sprint(t)})
	}
}
