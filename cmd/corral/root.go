package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/spf13/cobra"

	"github.com/corral-dev/corral/client"
)

// cliOpts are the global flags of the client commands.
type cliOpts struct {
	addr        string
	token       string
	format      string
	consistency string
	tls         *tls.Config // from CORRAL_CACERT, CORRAL_CLIENT_CERT, CORRAL_CLIENT_KEY
}

// exitError carries a process exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

func newRootCmd() *cobra.Command {
	o := &cliOpts{}
	root := &cobra.Command{
		Use:           "corral",
		Short:         "corral: peer compute hosts that manage one Ironic bare-metal cloud through Raft",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			tc, err := client.TLSConfigFromEnv(os.Getenv)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			o.tls = tc
			return nil
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&o.addr, "addr", envOr("CORRAL_ADDR", "http://127.0.0.1:7480"), "API address of any peer (env CORRAL_ADDR)")
	pf.StringVar(&o.token, "token", os.Getenv("CORRAL_TOKEN"), "API token (env CORRAL_TOKEN)")
	pf.StringVarP(&o.format, "format", "f", "table", "output format: table or json")
	pf.StringVar(&o.consistency, "consistency", "", "read consistency: stale, default or linearizable")
	root.AddCommand(newAgentCmd(), newDevCmd(), newMembersCmd(o), newRaftCmd(o), newHostCmd(o),
		newFlavorCmd(o), newLeaveCmd(o), newServerCmd(o), newNodeCmd(o), newSimCmd(), newPlanCmd(o),
		newManageCmd(o), newProviderCmd(o))
	root.AddCommand(newTLSCmd(), newKeygenCmd(), newKeyringCmd(o), newOperatorCmd(o), newSnapshotCmd(o), newVersionCmd(o), newHealthCmd())
	root.Version = currentBuild().String()
	root.SetVersionTemplate("{{.Version}}\n")
	return root
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// client reaches --addr; its typed reads are at --consistency, and its
// typed compute calls speak wire.ComputeVersion (which shows a server's
// embedded flavor and a flavor's extra specs).
func (o *cliOpts) client() *client.Client {
	c := client.New(o.addr, o.token)
	c.Consistency = o.consistency
	if o.tls != nil {
		_ = c.UseTLS(o.tls) // never fails with a configuration
	}
	return c
}

// get performs a read with the chosen consistency.
func (o *cliOpts) get(ctx context.Context, path string, out any) error {
	if o.consistency != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "consistency=" + url.QueryEscape(o.consistency)
	}
	return o.client().Do(ctx, "GET", path, nil, out)
}

// render prints v as JSON, or as a table built by rows.
func (o *cliOpts) render(w io.Writer, v any, header []string, rows [][]string) error {
	switch o.format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "table", "":
		t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
		hdr := make([]any, len(header))
		for i, h := range header {
			hdr[i] = strings.ToUpper(h)
		}
		t.Header(hdr...)
		for _, r := range rows {
			if err := t.Append(r); err != nil {
				return err
			}
		}
		return t.Render()
	}
	return &exitError{code: 2, err: fmt.Errorf("unknown output format %q: use table or json", o.format)}
}

// renderFields prints one object as a two-column table.
func (o *cliOpts) renderFields(w io.Writer, v any, fields [][2]string) error {
	rows := make([][]string, len(fields))
	for i, f := range fields {
		rows[i] = []string{f[0], f[1]}
	}
	return o.render(w, v, []string{"Field", "Value"}, rows)
}
