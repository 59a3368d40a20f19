package main

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/corral-dev/corral/client"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

func parseProperties(props []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range props {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, &exitError{code: 2, err: fmt.Errorf("property %q is not KEY=VALUE", p)}
		}
		out[k] = v
	}
	if err := fsm.ValidateExtraSpecs(out); err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	return out, nil
}

func newFlavorCmd(o *cliOpts) *cobra.Command {
	c := &cobra.Command{Use: "flavor", Short: "Flavor commands (Nova-compatible flavors)"}
	c.AddCommand(newFlavorCreateCmd(o), newFlavorListCmd(o), newFlavorShowCmd(o), newFlavorDeleteCmd(o), newFlavorSetCmd(o))
	return c
}

func newFlavorCreateCmd(o *cliOpts) *cobra.Command {
	var vcpus, ram, disk, ephemeral, swap int
	var rxtx float64
	var private bool
	var id, desc string
	var props []string
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a flavor",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			specs, err := parseProperties(props)
			if err != nil {
				return err
			}
			body := wire.FlavorCreate{Name: new(args[0]), VCPUs: new(vcpus), RAM: new(ram), Disk: new(disk),
				Ephemeral: new(ephemeral), Swap: new(swap), IsPublic: new(!private)}
			if rxtx != 0 {
				body.RxTxFactor = new(rxtx)
			}
			if id != "" {
				body.ID = new(id)
			}
			if desc != "" {
				body.Description = new(desc)
			}
			cl := o.client()
			f, err := cl.CreateFlavor(cmd.Context(), body)
			if err != nil {
				return err
			}
			if len(specs) > 0 {
				if err := cl.SetFlavorExtraSpecs(cmd.Context(), f.ID, specs); err != nil {
					return fmt.Errorf("flavor %s created, but setting its properties failed: %w", f.ID, err)
				}
				f.ExtraSpecs = specs
			}
			return o.showFlavor(cmd, f)
		},
	}
	f := cmd.Flags()
	f.IntVar(&vcpus, "vcpus", 1, "number of vCPUs")
	f.IntVar(&ram, "ram", 256, "memory in MiB")
	f.IntVar(&disk, "disk", 0, "root disk in GiB")
	f.IntVar(&ephemeral, "ephemeral", 0, "ephemeral disk in GiB")
	f.IntVar(&swap, "swap", 0, "swap in MiB")
	f.Float64Var(&rxtx, "rxtx-factor", 0, "RX/TX factor (default 1.0)")
	f.BoolVar(&private, "private", false, "make the flavor private")
	f.StringVar(&id, "id", "", "flavor id (default: a generated UUID)")
	f.StringVar(&desc, "description", "", "description")
	f.StringArrayVar(&props, "property", nil, "extra spec KEY=VALUE (repeatable)")
	return cmd
}

func (o *cliOpts) showFlavor(cmd *cobra.Command, f wire.Flavor) error {
	keys := make([]string, 0, len(f.ExtraSpecs))
	for k := range f.ExtraSpecs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var props []string
	for _, k := range keys {
		props = append(props, k+"='"+f.ExtraSpecs[k]+"'")
	}
	desc := ""
	if f.Description != nil {
		desc = *f.Description
	}
	return o.renderFields(cmd.OutOrStdout(), map[string]any{"flavor": f}, [][2]string{
		{"id", f.ID}, {"name", f.Name}, {"vcpus", strconv.Itoa(f.VCPUs)}, {"ram", strconv.Itoa(f.RAM)},
		{"disk", strconv.Itoa(f.Disk)}, {"OS-FLV-EXT-DATA:ephemeral", strconv.Itoa(f.Ephemeral)},
		{"swap", strconv.Itoa(f.Swap)}, {"rxtx_factor", strconv.FormatFloat(f.RxTxFactor, 'f', -1, 64)},
		{"os-flavor-access:is_public", strconv.FormatBool(f.IsPublic)}, {"description", desc},
		{"properties", strings.Join(props, ", ")},
	})
}

func newFlavorListCmd(o *cliOpts) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List flavors",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			flavors, err := o.client().ListFlavors(cmd.Context(), client.FlavorQuery{All: all})
			if err != nil {
				return err
			}
			resp := wire.FlavorsResponse{Flavors: flavors}
			var rows [][]string
			for _, f := range resp.Flavors {
				rows = append(rows, []string{f.ID, f.Name, strconv.Itoa(f.RAM), strconv.Itoa(f.Disk),
					strconv.Itoa(f.Ephemeral), strconv.Itoa(f.VCPUs), strconv.FormatBool(f.IsPublic)})
			}
			return o.render(cmd.OutOrStdout(), resp, []string{"ID", "Name", "RAM", "Disk", "Ephemeral", "VCPUs", "Is Public"}, rows)
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "include private flavors")
	return cmd
}

// findFlavor resolves an id or, failing that, a unique name.
func (o *cliOpts) findFlavor(ctx context.Context, ref string) (wire.Flavor, error) {
	cl := o.client()
	f, err := cl.GetFlavor(ctx, ref)
	if err == nil {
		return f, nil
	}
	if !client.IsStatus(err, http.StatusNotFound) {
		return wire.Flavor{}, err
	}
	all, err := cl.ListFlavors(ctx, client.FlavorQuery{All: true})
	if err != nil {
		return wire.Flavor{}, err
	}
	for _, f := range all {
		if f.Name == ref {
			return f, nil
		}
	}
	return wire.Flavor{}, &exitError{code: 1, err: fmt.Errorf("no flavor with id or name %q (see `corral flavor list --all`)", ref)}
}

func newFlavorShowCmd(o *cliOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID|NAME",
		Short: "Show a flavor",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := o.findFlavor(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return o.showFlavor(cmd, f)
		},
	}
}

func newFlavorDeleteCmd(o *cliOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "delete ID|NAME...",
		Short: "Delete flavors",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, ref := range args {
				f, err := o.findFlavor(cmd.Context(), ref)
				if err != nil {
					return err
				}
				if err := o.client().DeleteFlavor(cmd.Context(), f.ID); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted flavor %s (%s)\n", f.ID, f.Name)
			}
			return nil
		},
	}
}

func newFlavorSetCmd(o *cliOpts) *cobra.Command {
	var props, unset []string
	cmd := &cobra.Command{
		Use:   "set ID|NAME",
		Short: "Set or unset a flavor's properties (extra specs)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(props) == 0 && len(unset) == 0 {
				return &exitError{code: 2, err: fmt.Errorf("nothing to do: give --property KEY=VALUE or --unset-property KEY")}
			}
			specs, err := parseProperties(props)
			if err != nil {
				return err
			}
			f, err := o.findFlavor(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			cl := o.client()
			if len(specs) > 0 {
				if err := cl.SetFlavorExtraSpecs(cmd.Context(), f.ID, specs); err != nil {
					return err
				}
			}
			for _, k := range unset {
				if err := cl.DeleteFlavorExtraSpec(cmd.Context(), f.ID, k); err != nil {
					return err
				}
			}
			f, err = o.findFlavor(cmd.Context(), f.ID)
			if err != nil {
				return err
			}
			return o.showFlavor(cmd, f)
		},
	}
	cmd.Flags().StringArrayVar(&props, "property", nil, "extra spec KEY=VALUE (repeatable)")
	cmd.Flags().StringArrayVar(&unset, "unset-property", nil, "extra spec KEY to remove (repeatable)")
	return cmd
}
