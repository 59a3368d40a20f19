package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/corral-dev/corral/cluster"
)

func newKeygenCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "keygen",
		Short: "Print a new gossip encryption key for [gossip] encrypt or `corral keyring install`",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k := make([]byte, cluster.GossipKeySize)
			if _, err := rand.Read(k); err != nil {
				return fmt.Errorf("read random bytes: %w", err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), base64.StdEncoding.EncodeToString(k))
			return nil
		},
	}
}

func newKeyringCmd(o *cliOpts) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keyring",
		Short: "Rotate the gossip encryption key on every live peer",
		Long: `Rotate the gossip key without downtime, each step on every live peer:

  corral keyring install NEWKEY   # every peer accepts NEWKEY, still sends with the old one
  corral keyring use NEWKEY       # every peer sends with NEWKEY
  corral keyring remove OLDKEY    # the old key is no longer accepted

A step that failed on some peer is reported and exits 1: repeat it before
the next one. Each peer keeps its keyring in its data dir (gossip.keyring).`,
	}
	op := func(use, short, method string) *cobra.Command {
		return &cobra.Command{
			Use: use + " KEY", Short: short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				if _, err := cluster.ParseGossipKey(args[0]); err != nil {
					return &exitError{code: 2, err: err}
				}
				return o.keyring(cmd, method, args[0])
			},
		}
	}
	list := &cobra.Command{
		Use: "list", Short: "List the keys each peer holds, and the primary key", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.keyring(cmd, http.MethodGet, "") },
	}
	cmd.AddCommand(list,
		op("install", "Add a key to every peer's keyring (accepted for incoming gossip)", http.MethodPost),
		op("use", "Make an installed key every peer's primary key (used to send)", http.MethodPut),
		op("remove", "Remove a key that is not primary from every peer's keyring", http.MethodDelete))
	return cmd
}

func (o *cliOpts) keyring(cmd *cobra.Command, method, key string) error {
	resp, err := o.client().Keyring(cmd.Context(), method, key)
	if err != nil {
		return err
	}
	// Keys, each with the peers that hold it and those that use it.
	holders, primaries := map[string]int{}, map[string]int{}
	for _, p := range resp.Peers {
		for _, k := range p.Keys {
			holders[k]++
		}
		primaries[p.Primary]++
	}
	keys := make([]string, 0, len(holders))
	for k := range holders {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	rows := make([][]string, 0, len(keys)+len(resp.Errors))
	for _, k := range keys {
		rows = append(rows, []string{k, strconv.Itoa(holders[k]) + "/" + strconv.Itoa(len(resp.Peers)), strconv.Itoa(primaries[k])})
	}
	if err := o.render(cmd.OutOrStdout(), resp, []string{"Key", "Peers", "Primary on"}, rows); err != nil {
		return err
	}
	if len(resp.Errors) > 0 {
		var msgs []string
		for peer, e := range resp.Errors {
			msgs = append(msgs, peer+": "+e)
		}
		sort.Strings(msgs)
		return fmt.Errorf("not applied on %d peer(s); repeat the command:\n  %s", len(resp.Errors), strings.Join(msgs, "\n  "))
	}
	return nil
}
