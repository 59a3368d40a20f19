package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/fsm"
)

// quotaOptions are [quota], with Nova's option names and defaults
// (nova/conf/quota.py): every project's limits unless an admin sets its
// own (os-quota-sets) or the default class's (os-quota-class-sets).
// -1 is unlimited. The limits take effect in the replicated state when
// every live peer is configured with the same (cluster/quota.go).
var quotaOptions = []option{
	quotaOption("instances", fsm.QuotaInstances, "servers per project"),
	quotaOption("cores", fsm.QuotaCores, "flavor vCPUs per project"),
	quotaOption("ram", fsm.QuotaRAM, "flavor memory per project, in MiB"),
	quotaOption("metadata_items", fsm.QuotaMetadataItems, "metadata items per server"),
	quotaOption("injected_files", fsm.QuotaInjectedFiles, "personality files per server (shown up to microversion 2.56)"),
	quotaOption("injected_file_content_bytes", fsm.QuotaInjectedFileContentBytes, "bytes per personality file (shown up to 2.56)"),
	quotaOption("injected_file_path_length", fsm.QuotaInjectedFilePathBytes, "characters of a personality file's path (shown up to 2.56)"),
	quotaOption("key_pairs", fsm.QuotaKeyPairs, "key pairs per user"),
	quotaOption("server_groups", fsm.QuotaServerGroups, "server groups per project"),
	quotaOption("server_group_members", fsm.QuotaServerGroupMembers, "servers per server group"),
}

func init() { options = append(options, quotaOptions...) }

// quotaOption is the [quota] option key, the limit of resource r: an
// integer from -1 (unlimited) to Nova's largest.
func quotaOption(key, r, usage string) option {
	return option{section: "quota", key: key, usage: usage + "; -1: unlimited", set: func(c *agentConfig, v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < fsm.QuotaUnlimited || n > fsm.MaxQuotaLimit {
			return fmt.Errorf("%q is not a limit: an integer from -1 (unlimited) to %d", v, fsm.MaxQuotaLimit)
		}
		c.Quota[r] = n
		return nil
	}}
}
