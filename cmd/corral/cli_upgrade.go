package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"gopkg.in/ini.v1"

	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/upgrade/novabm"
)

// Exit codes of the upgrade tools, as nova-manage's.
const (
	upgradeDone    = 0 // everything done, or nothing to do
	upgradeSkipped = 1 // some rows could not be migrated (each listed with why)
	upgradeBadArgs = 2 // bad arguments, or a database (or service) that cannot be read
)

func badArgs(format string, args ...any) error {
	return &exitError{code: upgradeBadArgs, err: fmt.Errorf(format, args...)}
}

// readNova opens and reads the nova database of a URL.
func readNova(ctx context.Context, raw string) (novabm.Nova, error) {
	u, err := novabm.ParseDBURL(raw)
	if err != nil {
		return novabm.Nova{}, badArgs("--nova-db: %w", err)
	}
	db, err := novabm.Open(ctx, u)
	if err != nil {
		return novabm.Nova{}, badArgs("--nova-db: %w", err)
	}
	defer db.Close()
	nv, err := novabm.ReadNova(ctx, db, u.Redacted)
	if err != nil {
		return novabm.Nova{}, badArgs("--nova-db: %w", err)
	}
	return nv, nil
}

// readBareMetal opens and reads the nova_bm database of a URL.
func readBareMetal(ctx context.Context, raw string) (novabm.BareMetal, error) {
	u, err := novabm.ParseDBURL(raw)
	if err != nil {
		return novabm.BareMetal{}, badArgs("--nova-bm-db: %w", err)
	}
	db, err := novabm.Open(ctx, u)
	if err != nil {
		return novabm.BareMetal{}, badArgs("--nova-bm-db: %w", err)
	}
	defer db.Close()
	bm, err := novabm.ReadBareMetal(ctx, db, u.Redacted)
	if err != nil {
		return novabm.BareMetal{}, badArgs("--nova-bm-db: %w", err)
	}
	return bm, nil
}

// ironicTarget is where the tools reach Ironic: --ironic-url, or the
// [ironic] section of an agent's configuration file.
type ironicTarget struct {
	url, config, maxVersion string
}

func (t ironicTarget) resolve() (string, string, error) {
	switch {
	case t.url != "" && t.config != "":
		return "", "", badArgs("give --ironic-url or --config, not both")
	case t.url != "":
		return t.url, t.maxVersion, nil
	case t.config != "":
		f, err := ini.Load(t.config)
		if err != nil {
			return "", "", badArgs("--config %s: %w", t.config, err)
		}
		sec := f.Section("ironic")
		u := strings.TrimSpace(sec.Key("url").String())
		if u == "" {
			return "", "", badArgs("--config %s: [ironic] url is empty: this agent reaches no Ironic", t.config)
		}
		return u, firstNonEmptyStr(t.maxVersion, strings.TrimSpace(sec.Key("max_version").String())), nil
	}
	return "", "", badArgs("give --ironic-url URL or --config FILE (an agent's configuration with an [ironic] url)")
}

func firstNonEmptyStr(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func newBaremetalFlavorUpdateCmd(o *cliOpts) *cobra.Command {
	var kernel, ramdisk, rc, novaDB string
	var flavors []string
	var all, dryRun bool
	cmd := &cobra.Command{
		Use:   "baremetal-flavor-update --deploy-kernel ID --deploy-ramdisk ID (--all | --flavor F ...) [--nova-db URL] [--resource-class RC] [--dry-run]",
		Short: "Point Nova baremetal flavors at Ironic's deploy images and make them bare-metal flavors of corral",
		Long: `For every selected flavor, baremetal:deploy_kernel_id and baremetal:deploy_ramdisk_id
become Ironic's deploy images, and the flavor asks Placement for one unit of the nodes'
custom class (resources:CUSTOM_<CLASS>=1) with VCPU, MEMORY_MB and DISK_GB zeroed.
With --nova-db, the bare-metal flavors of the old nova database that corral lacks are
created first with the same ids. --all selects every flavor that names deploy images.
Idempotent. Exit codes: 0 done or nothing to do, 1 some flavors could not be updated
(listed with why), 2 bad arguments or a database that cannot be read.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case kernel == "" || ramdisk == "":
				return badArgs("--deploy-kernel and --deploy-ramdisk are required (the ids of Ironic's deploy images in Glance)")
			case all == (len(flavors) > 0):
				return badArgs("give either --all or --flavor F (repeatable)")
			}
			ctx := cmd.Context()
			var imports []novabm.NovaFlavor
			if novaDB != "" {
				nv, err := readNova(ctx, novaDB)
				if err != nil {
					return err
				}
				for _, id := range sortedInt64Keys(nv.Flavors) {
					imports = append(imports, nv.Flavors[id])
				}
			}
			store := novabm.HTTPCorral{C: o.client()}
			cur, err := store.Flavors(ctx)
			if err != nil {
				return badArgs("reading corral's flavors at %s: %w", o.addr, err)
			}
			changes, err := novabm.PlanFlavorUpdate(cur, novabm.FlavorOptions{DeployKernel: kernel, DeployRamdisk: ramdisk,
				ResourceClass: rc, All: all, Flavors: flavors, Import: imports})
			if err != nil {
				return badArgs("%w", err)
			}
			out := cmd.OutOrStdout()
			if dryRun {
				rows := make([][]string, 0, len(changes))
				n := 0
				for _, c := range changes {
					act := flavorAction(c)
					if act != "unchanged" && c.Skip == "" {
						n++
					}
					rows = append(rows, []string{c.ID, c.Name, act, specsString(c.Set)})
				}
				if err := o.render(out, changes, []string{"Flavor", "Name", "Action", "Extra specs set"}, rows); err != nil {
					return err
				}
				fmt.Fprintf(out, "dry run: %d of %d flavors would change; nothing was changed\n", n, len(changes))
				return flavorExit(changes, nil)
			}
			bar := progressbar.NewOptions(len(changes), progressbar.OptionSetWriter(cmd.ErrOrStderr()),
				progressbar.OptionSetDescription("updating flavors"), progressbar.OptionShowCount())
			var results []novabm.FlavorResult
			for _, c := range changes {
				results = append(results, novabm.ApplyFlavorUpdate(ctx, store, []novabm.FlavorChange{c})...)
				_ = bar.Add(1)
			}
			_ = bar.Finish()
			fmt.Fprintln(cmd.ErrOrStderr())
			rows := make([][]string, 0, len(results))
			changed := 0
			for _, r := range results {
				detail := specsString(r.Change.Set)
				if r.Err != nil {
					detail = r.Err.Error()
				}
				if r.Outcome == novabm.Created {
					changed++
				}
				rows = append(rows, []string{r.Change.ID, r.Change.Name, r.Outcome, detail})
			}
			if err := o.render(out, results, []string{"Flavor", "Name", "Outcome", "Detail"}, rows); err != nil {
				return err
			}
			if changed == 0 {
				fmt.Fprintf(out, "nothing to do: the %d selected flavors are up to date\n", len(results))
			} else {
				fmt.Fprintf(out, "updated %d of %d flavors\n", changed, len(results))
			}
			return flavorExit(changes, results)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kernel, "deploy-kernel", "", "Ironic's deploy kernel image id")
	f.StringVar(&ramdisk, "deploy-ramdisk", "", "Ironic's deploy ramdisk image id")
	f.StringVar(&rc, "resource-class", novabm.DefaultResourceClass, "Ironic resource class of the nodes these flavors select")
	f.StringVar(&novaDB, "nova-db", "", "the old nova database ([database] connection of nova.conf), to import its flavors first")
	f.StringSliceVar(&flavors, "flavor", nil, "a flavor id or name (repeatable)")
	f.BoolVar(&all, "all", false, "every flavor that names deploy images")
	f.BoolVar(&dryRun, "dry-run", false, "show what would change and change nothing")
	return cmd
}

func flavorAction(c novabm.FlavorChange) string {
	switch {
	case c.Skip != "":
		return "skip: " + c.Skip
	case c.Create != nil:
		return "import and update"
	case len(c.Set) > 0:
		return "update"
	}
	return "unchanged"
}

func flavorExit(changes []novabm.FlavorChange, results []novabm.FlavorResult) error {
	var bad []string
	for _, c := range changes {
		if c.Skip != "" {
			bad = append(bad, c.ID+": "+c.Skip)
		}
	}
	for _, r := range results {
		if r.Outcome == novabm.Failed {
			bad = append(bad, r.Change.ID+": "+r.Err.Error())
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return &exitError{code: upgradeSkipped, err: fmt.Errorf("%d flavor(s) not updated: %s", len(bad), strings.Join(bad, "; "))}
}

func specsString(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, " ")
}

func sortedInt64Keys[V any](m map[int64]V) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func newBaremetalMigrateCmd(o *cliOpts) *cobra.Command {
	var bmDB, novaDB, rc, driver, kernel, ramdisk string
	var target ironicTarget
	var dryRun bool
	var mirrorTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "baremetal-migrate --nova-bm-db URL --nova-db URL (--ironic-url URL | --config FILE) [--resource-class RC] [--driver ipmi] [--dry-run]",
		Short: "Bring Nova baremetal nodes and their deployed instances over to Ironic and corral",
		Long: `Every live bm node becomes an Ironic node with the same uuid and its interfaces become
ports (vif_uuid kept in extra). A node without an instance is managed and provided
(available for new servers); a node with an instance is adopted in Ironic with the
instance's uuid and image, its allocation backfilled, and the instance becomes a corral
server ACTIVE on that node, owned by a live host chosen like any other.

Resumable and idempotent: killed at any point and run again, it finishes without
duplicates; a second full run changes nothing and says so. Rows that cannot be
migrated (no pm_address, a duplicate MAC, an instance whose node row is gone, ...)
are listed with why and left alone. --dry-run prints the plan and changes nothing.
Exit codes: 0 done or nothing to do, 1 some rows could not be migrated, 2 bad
arguments or a database that cannot be read (naming the missing table or column).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if bmDB == "" || novaDB == "" {
				return badArgs("--nova-bm-db and --nova-db are both required ([baremetal] sql_connection and [database] connection of nova.conf)")
			}
			ctx := cmd.Context()
			bm, err := readBareMetal(ctx, bmDB)
			if err != nil {
				return err
			}
			nv, err := readNova(ctx, novaDB)
			if err != nil {
				return err
			}
			store := novabm.HTTPCorral{C: o.client()}
			opts := novabm.Options{ResourceClass: rc, Driver: driver, DeployKernel: kernel, DeployRamdisk: ramdisk,
				CorralFlavors: map[string]map[string]string{}}
			cur, ferr := store.Flavors(ctx)
			if ferr != nil && !dryRun {
				return badArgs("reading corral's flavors at %s (set CORRAL_ADDR and CORRAL_TOKEN): %w", o.addr, ferr)
			}
			for _, f := range cur {
				opts.CorralFlavors[f.ID] = f.ExtraSpecs
			}
			plan := novabm.BuildPlan(bm, nv, opts)
			out := cmd.OutOrStdout()
			if dryRun {
				if ferr != nil {
					plan.Notes = append(plan.Notes, "corral's flavors could not be read ("+ferr.Error()+"): deploy images come from nova's flavors")
				}
				return printPlan(o, out, plan)
			}
			url, maxVersion, err := target.resolve()
			if err != nil {
				return err
			}
			logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			ir, err := ironic.New(ctx, ironic.Options{URL: url, MaxVersion: maxVersion, Logger: logger, UserAgent: "corral-manage"})
			if err != nil {
				return badArgs("%w", err)
			}
			bar := progressbar.NewOptions(len(plan.Nodes), progressbar.OptionSetWriter(cmd.ErrOrStderr()),
				progressbar.OptionSetDescription("Ironic nodes"), progressbar.OptionShowCount())
			m := &novabm.Migrator{Ironic: ir, Corral: store, Log: logger, MirrorTimeout: mirrorTimeout,
				Progress: func(phase string, done, total int) {
					if phase == "corral" && done == 1 {
						_ = bar.Finish()
						bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(cmd.ErrOrStderr()),
							progressbar.OptionSetDescription("corral servers"), progressbar.OptionShowCount())
					}
					_ = bar.Set(done)
				}}
			results := m.Run(ctx, plan)
			_ = bar.Finish()
			fmt.Fprintln(cmd.ErrOrStderr())
			return printResults(o, out, plan, results)
		},
	}
	f := cmd.Flags()
	f.StringVar(&bmDB, "nova-bm-db", "", "the nova_bm database ([baremetal] sql_connection of nova.conf)")
	f.StringVar(&novaDB, "nova-db", "", "the nova database ([database] connection of nova.conf)")
	f.StringVar(&rc, "resource-class", novabm.DefaultResourceClass, "Ironic resource class of the nodes")
	f.StringVar(&driver, "driver", novabm.DefaultDriver, "Ironic hardware type of the nodes")
	f.StringVar(&kernel, "deploy-kernel", "", "Ironic's deploy kernel for nodes whose flavor names none (free nodes)")
	f.StringVar(&ramdisk, "deploy-ramdisk", "", "Ironic's deploy ramdisk for nodes whose flavor names none")
	f.StringVar(&target.url, "ironic-url", "", "Ironic API root URL, e.g. http://127.0.0.1:6385")
	f.StringVar(&target.config, "config", "", "an agent's configuration file: its [ironic] url is used")
	f.StringVar(&target.maxVersion, "ironic-max-version", "", "highest Ironic microversion to use")
	f.DurationVar(&mirrorTimeout, "mirror-timeout", 2*time.Minute, "how long to wait for corral's node sync to see the adopted nodes")
	f.BoolVar(&dryRun, "dry-run", false, "print the plan and change nothing anywhere")
	return cmd
}

func printSkipped(o *cliOpts, out io.Writer, p novabm.Plan) error {
	for _, n := range p.Notes {
		fmt.Fprintln(out, "note: "+n)
	}
	if len(p.Skipped) == 0 {
		return nil
	}
	fmt.Fprintf(out, "%d row(s) cannot be migrated and are left alone:\n", len(p.Skipped))
	rows := make([][]string, 0, len(p.Skipped))
	for _, s := range p.Skipped {
		rows = append(rows, []string{s.Kind, s.ID, s.Reason})
	}
	return o.render(out, p.Skipped, []string{"Row", "ID", "Why"}, rows)
}

func printPlan(o *cliOpts, out io.Writer, p novabm.Plan) error {
	rows := make([][]string, 0, len(p.Nodes))
	for _, n := range p.Nodes {
		inst, act := "", "enroll, ports, manage, provide"
		if n.Instance != nil {
			inst, act = n.Instance.UUID, "enroll, ports, manage, adopt, allocation, corral server"
		}
		rows = append(rows, []string{strconv.FormatInt(n.BMID, 10), n.UUID, inst, strconv.Itoa(len(n.Ports)), act})
	}
	if err := o.render(out, p, []string{"BM ID", "Node", "Instance", "Ports", "Plan"}, rows); err != nil {
		return err
	}
	if err := printSkipped(o, out, p); err != nil {
		return err
	}
	fmt.Fprintf(out, "dry run: %d nodes (%d deployed) would be migrated, %d rows skipped; nothing was changed\n",
		len(p.Nodes), p.Deployed(), len(p.Skipped))
	if len(p.Skipped) > 0 {
		return &exitError{code: upgradeSkipped, err: fmt.Errorf("%d row(s) cannot be migrated (listed above)", len(p.Skipped))}
	}
	return nil
}

func printResults(o *cliOpts, out io.Writer, p novabm.Plan, rs []novabm.Result) error {
	count := map[string]int{}
	rows := make([][]string, 0, len(rs))
	for _, r := range rs {
		count[r.Outcome]++
		detail := strings.Join(r.Actions, ", ")
		if r.Err != nil {
			detail = r.Err.Error()
		}
		rows = append(rows, []string{strconv.FormatInt(r.BMID, 10), r.NodeUUID, r.Instance, r.Outcome, detail})
	}
	type report struct {
		Results []novabm.Result `json:"results"`
		Skipped []novabm.Skip   `json:"skipped"`
	}
	if err := o.render(out, report{rs, p.Skipped}, []string{"BM ID", "Node", "Instance", "Outcome", "Detail"}, rows); err != nil {
		return err
	}
	if err := printSkipped(o, out, p); err != nil {
		return err
	}
	switch {
	case count[novabm.Created] == 0 && count[novabm.Failed] == 0:
		fmt.Fprintf(out, "nothing to do: %d nodes (%d deployed) are already migrated\n", len(rs), p.Deployed())
	default:
		fmt.Fprintf(out, "migrated %d nodes, %d already were, %d failed; %d rows skipped\n",
			count[novabm.Created], count[novabm.Unchanged], count[novabm.Failed], len(p.Skipped))
	}
	if n := count[novabm.Failed] + len(p.Skipped); n > 0 {
		var errs []error
		for _, r := range rs {
			if r.Err != nil {
				errs = append(errs, fmt.Errorf("bm node %d: %w", r.BMID, r.Err))
			}
		}
		msg := fmt.Sprintf("%d row(s) not migrated (listed above); fix them and run again", n)
		if len(errs) > 0 {
			return &exitError{code: upgradeSkipped, err: fmt.Errorf("%s: %w", msg, errors.Join(errs...))}
		}
		return &exitError{code: upgradeSkipped, err: errors.New(msg)}
	}
	return nil
}
