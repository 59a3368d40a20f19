package main

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"gopkg.in/ini.v1"

	"github.com/corral-dev/corral/api"
	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/auth/keystone"
	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/tlsutil"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/ironic/mirror"
	"github.com/corral-dev/corral/neutron"
)

// Default ports of an agent.
const (
	defaultHTTPPort   = 7480
	defaultRaftPort   = 7481
	defaultGossipPort = 7482
)

// agentConfig is an agent's whole configuration: file, then environment
// (CORRAL_<SECTION>_<KEY>, DEFAULT keys as CORRAL_<KEY>), then flags.
type agentConfig struct {
	Name             string
	DataDir          string
	Kind             string
	LogLevel         string
	LogFormat        string
	Bind             string
	HTTPPort         int
	RaftPort         int
	GossipPort       int
	Join             []string
	BootstrapExpect  int
	MaxVoters        int
	LeaveOnTerminate bool
	// EnableInstancePassword is Nova's [DEFAULT] enable_instance_password:
	// creates and rebuilds answer the server's adminPass.
	EnableInstancePassword bool
	Raft                   cluster.RaftTimings
	Gossip                 cluster.GossipTimings
	AdminTokens            []string
	ReaderTokens           []string
	PeerToken              string
	Ironic                 ironicConfig
	Failover               failoverConfig
	Hypervisor             hypervisorConfig

	// AuthStrategy is [auth] strategy (config_auth.go); Keystone is
	// [keystone_authtoken].
	AuthStrategy string
	Keystone     keystone.Options
	// Glance is the [glance] section (config_glance.go).
	Glance glanceConfig
	// Neutron is the [neutron] section (config_neutron.go).
	Neutron neutron.Options
	// NeutronReap is the leader's port reaper, in [neutron] too
	// (config_neutron_reap.go).
	NeutronReap neutronReapConfig

	// LegacyInventory is [workarounds]
	// report_ironic_standard_resource_class_inventory.
	LegacyInventory bool
	// DeletedRetention is how long deleted servers stay visible before
	// the leader purges them (negative: never).
	DeletedRetention time.Duration
	// TLS is the [tls] section; tls is what it loaded (nil: plain text).
	TLS tlsutil.Files
	tls *tlsutil.Config
	// GossipKey is [gossip] encrypt (base64, from `corral keygen`).
	GossipKey string
	// Limits are [api] max_body_bytes, write_rate and write_burst.
	Limits core.Limits
	// MetricsRequireAuth is [telemetry] metrics_require_auth.
	MetricsRequireAuth bool
	// DeadServerCleanupAfter is [raft] dead_server_cleanup_after (negative: off).
	DeadServerCleanupAfter time.Duration
	// Quota is [quota] (config_quota.go): every resource's default limit.
	Quota fsm.QuotaLimits
}

// hypervisorConfig is the [hypervisor] section (hosts of kind hypervisor).
type hypervisorConfig struct {
	VCPUs, MemoryMB, DiskGB                                     int
	CPUAllocationRatio, RAMAllocationRatio, DiskAllocationRatio float64
}

// failoverConfig is the [failover] section.
type failoverConfig struct {
	DownGrace      time.Duration
	SilentGrace    time.Duration // negative: off
	RefusedGrace   time.Duration // negative: off
	UpGrace        time.Duration
	FreezeFraction float64
}

// ironicConfig is the [ironic] section.
type ironicConfig struct {
	URL            string
	Reservation    string
	SyncInterval   time.Duration
	RequestTimeout time.Duration
	DeployTimeout  time.Duration
	Workers        int
	MaxVersion     string
	// DeployWait is how deploys in flight are waited for: watch or poll.
	DeployWait string
	// OrphanGrace is how long the leader must see a node deployed with no
	// reservation before it undeploys it (0: twice SyncInterval; negative: never).
	OrphanGrace time.Duration
	// FullSyncInterval is how often the leader lists every node; the syncs
	// in between list only the nodes changed since (ironic/mirror).
	FullSyncInterval time.Duration
	// Auth is how corral authenticates to Ironic (config_auth.go).
	Auth ironic.Auth
	// ProxyAuth is what the os-baremetal-nodes proxy presents to Ironic
	// for a Keystone caller: proxyAuthUser or proxyAuthService.
	ProxyAuth string
}

func defaultAgentConfig() agentConfig {
	host, _ := os.Hostname()
	return agentConfig{
		Name: host, DataDir: "/var/lib/corral", Kind: fsm.KindIronic, LogLevel: "info", LogFormat: "text",
		Bind: "127.0.0.1", HTTPPort: defaultHTTPPort, RaftPort: defaultRaftPort, GossipPort: defaultGossipPort,
		MaxVoters: 5, EnableInstancePassword: true, Raft: cluster.DefaultRaftTimings(), Gossip: cluster.DefaultGossipTimings(),
		Ironic: ironicConfig{Reservation: "auto", SyncInterval: 5 * time.Second, FullSyncInterval: mirror.DefaultFullSyncInterval, RequestTimeout: 30 * time.Second,
			DeployTimeout: 30 * time.Minute, MaxVersion: "1.82", DeployWait: "watch", ProxyAuth: proxyAuthUser},
		DeletedRetention:       cluster.DefaultDeletedRetention,
		TLS:                    tlsutil.Files{VerifyOutgoing: true},
		Limits:                 core.Limits{MaxBodyBytes: core.DefaultMaxBodyBytes},
		DeadServerCleanupAfter: cluster.DefaultDeadServerCleanupAfter,
		Failover:               failoverConfig{DownGrace: cluster.DefaultDownGrace, SilentGrace: cluster.DefaultSilentGrace, RefusedGrace: cluster.DefaultRefusedGrace, UpGrace: time.Second, FreezeFraction: 0.5},
		Hypervisor: hypervisorConfig{VCPUs: 16, MemoryMB: 65536, DiskGB: 500, CPUAllocationRatio: 4,
			RAMAllocationRatio: 1.5, DiskAllocationRatio: 1},
		Quota: fsm.NovaQuotaDefaults(),
	}
}

// option is one configuration key; flag is its command-line name, if any.
type option struct {
	section, key, flag, usage string
	set                       func(c *agentConfig, v string) error
	list                      bool // a repeatable flag / comma-separated value
	boolean                   bool
}

// options is the configuration reference; README.md documents the same table.
var options = []option{
	{section: "DEFAULT", key: "name", flag: "name", usage: "unique name of this compute host (peer)", set: str(func(c *agentConfig) *string { return &c.Name })},
	{section: "DEFAULT", key: "data_dir", flag: "data-dir", usage: "directory for the raft log and snapshots", set: str(func(c *agentConfig) *string { return &c.DataDir })},
	{section: "DEFAULT", key: "host_kind", flag: "kind", usage: "host kind: ironic or hypervisor", set: str(func(c *agentConfig) *string { return &c.Kind })},
	{section: "DEFAULT", key: "log_level", flag: "log-level", usage: "debug, info, warn or error", set: str(func(c *agentConfig) *string { return &c.LogLevel })},
	{section: "DEFAULT", key: "deleted_retention", usage: "how long deleted servers stay visible (?deleted=true) before the leader purges them; off: never", set: deletedRetention},
	{section: "DEFAULT", key: "log_format", flag: "log-format", usage: "text or json", set: str(func(c *agentConfig) *string { return &c.LogFormat })},
	{section: "DEFAULT", key: "bind", flag: "bind", usage: "IP address for the API, raft and gossip", set: str(func(c *agentConfig) *string { return &c.Bind })},
	{section: "DEFAULT", key: "leave_on_terminate", flag: "leave-on-terminate", boolean: true, usage: "leave raft and gossip cleanly on SIGTERM/SIGINT", set: boolean(func(c *agentConfig) *bool { return &c.LeaveOnTerminate })},
	{section: "DEFAULT", key: "enable_instance_password", boolean: true, usage: "answer a server's admin password (adminPass) to its create and rebuild, as Nova's option", set: boolean(func(c *agentConfig) *bool { return &c.EnableInstancePassword })},
	{section: "api", key: "port", flag: "http-port", usage: "HTTP API port", set: integer(func(c *agentConfig) *int { return &c.HTTPPort }, 1, 65535)},
	{section: "api", key: "max_body_bytes", usage: "largest request body in bytes; a larger one answers 413", set: int64Option(func(c *agentConfig) *int64 { return &c.Limits.MaxBodyBytes }, 1024, 1<<30)},
	{section: "api", key: "write_rate", usage: "writes per second one client (IP address) may send before 429 (default off)", set: writeRate},
	{section: "api", key: "write_burst", usage: "writes one client may send at once (default twice write_rate)", set: integer(func(c *agentConfig) *int { return &c.Limits.WriteBurst }, 1, 1<<20)},
	{section: "telemetry", key: "metrics_require_auth", usage: "/metrics needs a reader or admin token", set: boolean(func(c *agentConfig) *bool { return &c.MetricsRequireAuth })},
	{section: "raft", key: "port", flag: "raft-port", usage: "raft TCP port", set: integer(func(c *agentConfig) *int { return &c.RaftPort }, 1, 65535)},
	{section: "raft", key: "bootstrap_expect", flag: "bootstrap-expect", usage: "bootstrap raft once this many peers have met in gossip", set: integer(func(c *agentConfig) *int { return &c.BootstrapExpect }, 0, 99)},
	{section: "raft", key: "max_voters", flag: "max-voters", usage: "peers beyond this many join raft as non-voters", set: integer(func(c *agentConfig) *int { return &c.MaxVoters }, 1, 99)},
	{section: "raft", key: "dead_server_cleanup_after", usage: "a voter dead in gossip this long is removed from raft when the live voters keep a quorum (off: never)", set: deadServerCleanup},
	{section: "raft", key: "heartbeat_timeout", usage: "follower heartbeat timeout", set: duration(func(c *agentConfig) *time.Duration { return &c.Raft.HeartbeatTimeout })},
	{section: "raft", key: "election_timeout", usage: "candidate election timeout", set: duration(func(c *agentConfig) *time.Duration { return &c.Raft.ElectionTimeout })},
	{section: "raft", key: "leader_lease_timeout", usage: "leader lease timeout", set: duration(func(c *agentConfig) *time.Duration { return &c.Raft.LeaderLeaseTimeout })},
	{section: "raft", key: "commit_timeout", usage: "max delay before a heartbeat carries the commit index", set: duration(func(c *agentConfig) *time.Duration { return &c.Raft.CommitTimeout })},
	{section: "raft", key: "snapshot_interval", usage: "how often to check whether to snapshot", set: duration(func(c *agentConfig) *time.Duration { return &c.Raft.SnapshotInterval })},
	{section: "raft", key: "snapshot_threshold", usage: "log entries between snapshots", set: uinteger(func(c *agentConfig) *uint64 { return &c.Raft.SnapshotThreshold })},
	{section: "raft", key: "trailing_logs", usage: "log entries kept after a snapshot", set: uinteger(func(c *agentConfig) *uint64 { return &c.Raft.TrailingLogs })},
	{section: "raft", key: "apply_timeout", usage: "how long a write may wait for commit", set: duration(func(c *agentConfig) *time.Duration { return &c.Raft.ApplyTimeout })},
	{section: "gossip", key: "port", flag: "gossip-port", usage: "gossip (memberlist) TCP and UDP port", set: integer(func(c *agentConfig) *int { return &c.GossipPort }, 1, 65535)},
	{section: "gossip", key: "join", flag: "join", list: true, usage: "gossip address IP:PORT of a peer to join (repeatable)", set: list(func(c *agentConfig) *[]string { return &c.Join })},
	{section: "gossip", key: "encrypt", usage: "gossip encryption key, base64 of 32 bytes (`corral keygen`); seeds the keyring kept in data_dir, rotated with `corral keyring`", set: str(func(c *agentConfig) *string { return &c.GossipKey })},
	{section: "gossip", key: "probe_interval", usage: "failure detector probe interval", set: duration(func(c *agentConfig) *time.Duration { return &c.Gossip.ProbeInterval })},
	{section: "gossip", key: "probe_timeout", usage: "failure detector probe timeout", set: duration(func(c *agentConfig) *time.Duration { return &c.Gossip.ProbeTimeout })},
	{section: "gossip", key: "suspicion_mult", usage: "suspicion timeout multiplier", set: integer(func(c *agentConfig) *int { return &c.Gossip.SuspicionMult }, 1, 100)},
	{section: "gossip", key: "gossip_interval", usage: "gossip fan-out interval", set: duration(func(c *agentConfig) *time.Duration { return &c.Gossip.GossipInterval })},
	{section: "gossip", key: "push_pull_interval", usage: "full state sync interval", set: duration(func(c *agentConfig) *time.Duration { return &c.Gossip.PushPullInterval })},
	{section: "auth", key: "admin_tokens", list: true, usage: "comma-separated tokens with the admin role", set: list(func(c *agentConfig) *[]string { return &c.AdminTokens })},
	{section: "auth", key: "reader_tokens", list: true, usage: "comma-separated tokens with the reader role", set: list(func(c *agentConfig) *[]string { return &c.ReaderTokens })},
	{section: "ironic", key: "url", flag: "ironic-url", usage: "Ironic API root URL, e.g. http://127.0.0.1:6385 (empty: no Ironic)", set: str(func(c *agentConfig) *string { return &c.Ironic.URL })},
	{section: "ironic", key: "reservation", usage: "auto, allocations or instance_uuid (deprecated)", set: str(func(c *agentConfig) *string { return &c.Ironic.Reservation })},
	{section: "ironic", key: "sync_interval", usage: "how often the leader lists Ironic's nodes", set: duration(func(c *agentConfig) *time.Duration { return &c.Ironic.SyncInterval })},
	{section: "ironic", key: "full_sync_interval", usage: "how often the leader lists every Ironic node, marking those deleted missing; the syncs in between list only the nodes Ironic changed or created since (at most sync_interval: every sync lists every node)", set: duration(func(c *agentConfig) *time.Duration { return &c.Ironic.FullSyncInterval })},
	{section: "ironic", key: "request_timeout", usage: "timeout of one Ironic request", set: duration(func(c *agentConfig) *time.Duration { return &c.Ironic.RequestTimeout })},
	{section: "ironic", key: "deploy_timeout", usage: "how long a deploy or undeploy may take", set: duration(func(c *agentConfig) *time.Duration { return &c.Ironic.DeployTimeout })},
	{section: "ironic", key: "workers", usage: "servers this host builds or deletes at once", set: integer(func(c *agentConfig) *int { return &c.Ironic.Workers }, 1, 1000)},
	{section: "ironic", key: "orphan_grace", usage: "how long the leader must see a node deployed with no allocation and no instance_uuid before it undeploys it (default twice sync_interval; off: never)", set: orphanGrace},
	{section: "ironic", key: "deploy_wait", usage: "watch: deploys in flight hold no worker, one watcher per host lists them; poll: a worker polls each deploy", set: deployWait},
	{section: "ironic", key: "max_version", usage: "highest Ironic microversion to use", set: str(func(c *agentConfig) *string { return &c.Ironic.MaxVersion })},
	{section: "failover", key: "refused_grace", usage: "how long a host's raft and gossip ports must refuse connections before the leader marks it down without waiting for gossip (off: never, and followers wait for raft's heartbeat timeout on a killed leader)", set: refusedGrace},
	{section: "failover", key: "down_grace", usage: "how long a host must be dead in gossip before the leader marks it down on gossip's word alone (though the leader still hears it)", set: duration(func(c *agentConfig) *time.Duration { return &c.Failover.DownGrace })},
	{section: "failover", key: "silent_grace", usage: "how long the leader must also have heard nothing from a host dead in gossip (it pings every host itself) before it marks it down without waiting for down_grace (off: deaths that only gossip sees wait for down_grace)", set: silentGrace},
	{section: "failover", key: "up_grace", usage: "how long a returning host must stay alive before it is up again", set: duration(func(c *agentConfig) *time.Duration { return &c.Failover.UpGrace })},
	{section: "failover", key: "freeze_fraction", usage: "freeze failover when more than this share of up hosts is lost at once", set: fraction(func(c *agentConfig) *float64 { return &c.Failover.FreezeFraction })},
	{section: "workarounds", key: "report_ironic_standard_resource_class_inventory", usage: "Ironic node providers also report VCPU, MEMORY_MB and DISK_GB (legacy; dangerous)", set: boolean(func(c *agentConfig) *bool { return &c.LegacyInventory })},
	{section: "hypervisor", key: "vcpus", usage: "VCPU inventory of a hypervisor host", set: integer(func(c *agentConfig) *int { return &c.Hypervisor.VCPUs }, 1, 1<<20)},
	{section: "hypervisor", key: "memory_mb", usage: "MEMORY_MB inventory of a hypervisor host", set: integer(func(c *agentConfig) *int { return &c.Hypervisor.MemoryMB }, 1, 1<<30)},
	{section: "hypervisor", key: "disk_gb", usage: "DISK_GB inventory of a hypervisor host", set: integer(func(c *agentConfig) *int { return &c.Hypervisor.DiskGB }, 1, 1<<30)},
	{section: "hypervisor", key: "cpu_allocation_ratio", usage: "VCPU overcommit", set: ratio(func(c *agentConfig) *float64 { return &c.Hypervisor.CPUAllocationRatio })},
	{section: "hypervisor", key: "ram_allocation_ratio", usage: "MEMORY_MB overcommit", set: ratio(func(c *agentConfig) *float64 { return &c.Hypervisor.RAMAllocationRatio })},
	{section: "hypervisor", key: "disk_allocation_ratio", usage: "DISK_GB overcommit", set: ratio(func(c *agentConfig) *float64 { return &c.Hypervisor.DiskAllocationRatio })},
	{section: "auth", key: "peer_token", usage: "the peers' own secret, the same on every peer, at least 16 characters, no user's token; required without [tls] (raft, gossip and forwarding between peers prove themselves with it)", set: str(func(c *agentConfig) *string { return &c.PeerToken })},
	// TLS (cli_tls.go makes the files).
	{section: "tls", key: "ca_file", usage: "PEM CA certificate: the API, raft and forwarding trust only certificates it signed", set: str(func(c *agentConfig) *string { return &c.TLS.CAFile })},
	{section: "tls", key: "cert_file", usage: "PEM certificate of this peer (signed by ca_file; its SANs must name the bind address)", set: str(func(c *agentConfig) *string { return &c.TLS.CertFile })},
	{section: "tls", key: "key_file", usage: "PEM private key of cert_file", set: str(func(c *agentConfig) *string { return &c.TLS.KeyFile })},
	{section: "tls", key: "verify_incoming", usage: "the API requires a client certificate signed by ca_file (raft always does)", set: boolean(func(c *agentConfig) *bool { return &c.TLS.VerifyIncoming })},
	{section: "tls", key: "verify_outgoing", usage: "verify the leader's certificate when forwarding (default true)", set: boolean(func(c *agentConfig) *bool { return &c.TLS.VerifyOutgoing })},
}

func envName(o option) string {
	if o.section == "DEFAULT" {
		return "CORRAL_" + strings.ToUpper(o.key)
	}
	return "CORRAL_" + strings.ToUpper(o.section+"_"+o.key)
}

// registerAgentFlags adds the flagged options to fs.
func registerAgentFlags(fs *pflag.FlagSet) {
	fs.String("config", "", "INI configuration file (sections [DEFAULT], [api], [raft], [gossip], [auth], [ironic])")
	for _, o := range options {
		switch {
		case o.flag == "":
		case o.list:
			fs.StringArray(o.flag, nil, o.usage)
		case o.boolean:
			fs.Bool(o.flag, false, o.usage)
		default:
			fs.String(o.flag, "", o.usage)
		}
	}
}

// loadAgentConfig builds the configuration from file, env and flags and
// validates it, reporting every problem at once.
func loadAgentConfig(fs *pflag.FlagSet, getenv func(string) string) (agentConfig, error) {
	c := defaultAgentConfig()
	var errs []error
	byKey := map[string]option{}
	for _, o := range options {
		byKey[o.section+"."+o.key] = o
	}
	path, _ := fs.GetString("config")
	if path != "" {
		f, err := ini.LoadSources(ini.LoadOptions{Insensitive: false}, path)
		if err != nil {
			return c, fmt.Errorf("read config file %s: %w", path, err)
		}
		for _, sec := range f.Sections() {
			for _, k := range sec.Keys() {
				o, ok := byKey[sec.Name()+"."+k.Name()]
				if !ok {
					errs = append(errs, fmt.Errorf("%s: unknown option [%s] %s%s", path, sec.Name(), k.Name(), suggest(sec.Name(), k.Name())))
					continue
				}
				if err := o.set(&c, k.Value()); err != nil {
					errs = append(errs, fmt.Errorf("%s: [%s] %s: %w", path, o.section, o.key, err))
				}
			}
		}
	}
	for _, o := range options {
		if v := getenv(envName(o)); v != "" {
			if o.list {
				*listField(&c, o) = nil
			}
			if err := o.set(&c, v); err != nil {
				errs = append(errs, fmt.Errorf("environment %s: %w", envName(o), err))
			}
		}
	}
	if tok := getenv("CORRAL_ADMIN_TOKEN"); tok != "" {
		c.AdminTokens = append(c.AdminTokens, tok)
	}
	for _, o := range options {
		if o.flag == "" || !fs.Changed(o.flag) {
			continue
		}
		var vals []string
		switch {
		case o.list:
			vals, _ = fs.GetStringArray(o.flag)
			*listField(&c, o) = nil
		case o.boolean:
			b, _ := fs.GetBool(o.flag)
			vals = []string{strconv.FormatBool(b)}
		default:
			v, _ := fs.GetString(o.flag)
			vals = []string{v}
		}
		for _, v := range vals {
			if err := o.set(&c, v); err != nil {
				errs = append(errs, fmt.Errorf("flag --%s: %w", o.flag, err))
			}
		}
	}
	// Validate even after parse errors, so every problem is reported at once.
	return c, errors.Join(append(errs, c.validate())...)
}

func listField(c *agentConfig, o option) *[]string {
	switch o.key {
	case "join":
		return &c.Join
	case "admin_tokens":
		return &c.AdminTokens
	default:
		return &c.ReaderTokens
	}
}

// suggest helps with an unknown option: it names the section that has the
// key, or the closest key in the same section (for typos), or the
// section's keys, or the known sections.
func suggest(section, key string) string {
	var keys, elsewhere []string
	best, bestD := "", min(3, len(key)/2)+1
	for _, o := range options {
		if o.section != section {
			if o.key == key {
				elsewhere = append(elsewhere, "["+o.section+"]")
			}
			continue
		}
		keys = append(keys, o.key)
		if d := editDistance(o.key, key); d < bestD {
			best, bestD = o.key, d
		}
	}
	switch {
	case len(keys) == 0:
	case len(elsewhere) > 0:
		return fmt.Sprintf(" (%s belongs in %s)", key, strings.Join(elsewhere, " or "))
	case best != "":
		return fmt.Sprintf(" (did you mean %s?)", best)
	default:
		return fmt.Sprintf(" (known keys in [%s]: %s)", section, strings.Join(keys, ", "))
	}
	var secs []string
	seen := map[string]bool{}
	for _, o := range options {
		if !seen[o.section] {
			seen[o.section] = true
			secs = append(secs, o.section)
		}
	}
	sort.Strings(secs)
	return fmt.Sprintf(" ([%s] is not a section; known sections: %s)", section, strings.Join(secs, ", "))
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func (c *agentConfig) validate() error {
	var errs []error // the bind address is checked by clusterConfig().Validate
	if c.HTTPPort == c.RaftPort || c.HTTPPort == c.GossipPort || c.RaftPort == c.GossipPort {
		errs = append(errs, fmt.Errorf("the HTTP (%d), raft (%d) and gossip (%d) ports must differ", c.HTTPPort, c.RaftPort, c.GossipPort))
	}
	for _, j := range c.Join {
		if _, _, err := net.SplitHostPort(j); err != nil {
			errs = append(errs, fmt.Errorf("join address %q is not IP:PORT of a peer's gossip port", j))
		}
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log level %q is not one of debug, info, warn, error", c.LogLevel))
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		errs = append(errs, fmt.Errorf("log format %q is not text or json", c.LogFormat))
	}
	switch c.Ironic.Reservation {
	case "auto", "allocations", "instance_uuid":
	default:
		errs = append(errs, fmt.Errorf("[ironic] reservation %q is not auto, allocations or instance_uuid", c.Ironic.Reservation))
	}
	if c.Ironic.URL != "" && !strings.HasPrefix(c.Ironic.URL, "http://") && !strings.HasPrefix(c.Ironic.URL, "https://") {
		errs = append(errs, fmt.Errorf("[ironic] url %q must start with http:// or https://", c.Ironic.URL))
	}
	if len(c.AdminTokens) == 0 && c.AuthStrategy != strategyKeystone {
		errs = append(errs, errors.New("no admin token: set [auth] admin_tokens in the config file or CORRAL_ADMIN_TOKEN in the environment (with strategy keystone, Keystone's admins need none)"))
	}
	errs = append(errs, c.validateAuth(), c.validateGlance(), c.validateNeutron(), c.validateNeutronReap())
	for _, t := range append(append([]string{}, c.AdminTokens...), c.ReaderTokens...) {
		if len(t) < 8 {
			errs = append(errs, fmt.Errorf("token %q is too short: use at least 8 characters", t[:min(len(t), 3)]+"…"))
		}
	}
	c.tls = nil
	if c.TLS.Enabled() {
		tc, err := tlsutil.Load(c.TLS)
		if err != nil {
			errs = append(errs, err)
		}
		c.tls = tc
	}
	errs = append(errs, c.validatePeerIdentity())
	cc := c.clusterConfig()
	if cc.TLS == nil && len(cc.PeerToken) < cluster.MinPeerTokenLen {
		cc.PeerToken = strings.Repeat("-", cluster.MinPeerTokenLen) // told once, by validatePeerIdentity
	}
	if err := cc.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// validatePeerIdentity checks how this peer proves to the others that it
// is one: its peer certificate names it ([tls]), or, without TLS, the peer
// token is set, long enough, and nobody's user token.
func (c *agentConfig) validatePeerIdentity() error {
	var errs []error
	if c.tls != nil && c.tls.PeerName() != c.Name {
		errs = append(errs, fmt.Errorf("[tls] cert_file %s is the certificate of peer %q, not of this agent %q: give the agent its own (`corral tls cert create --name %s`)",
			c.TLS.CertFile, c.tls.PeerName(), c.Name, c.Name))
	}
	switch {
	case c.PeerToken == "" && !c.TLS.Enabled():
		errs = append(errs, fmt.Errorf("no peer token: without [tls], peers prove to each other who they are with [auth] peer_token "+
			"(or CORRAL_AUTH_PEER_TOKEN): set it to the same secret of at least %d characters on every peer (e.g. `openssl rand -hex 16`), "+
			"or turn on [tls] with peer certificates", cluster.MinPeerTokenLen))
	case c.PeerToken == "":
	case len(c.PeerToken) < cluster.MinPeerTokenLen:
		errs = append(errs, fmt.Errorf("[auth] peer_token %q is too short: use at least %d characters (e.g. `openssl rand -hex 16`), the same on every peer",
			c.PeerToken[:min(len(c.PeerToken), 3)]+"…", cluster.MinPeerTokenLen))
	case slices.Contains(c.AdminTokens, c.PeerToken) || slices.Contains(c.ReaderTokens, c.PeerToken):
		errs = append(errs, errors.New("[auth] peer_token is also a user's token (in admin_tokens, reader_tokens or CORRAL_ADMIN_TOKEN): "+
			"the peers' secret must be of its own, known to the peers only"))
	}
	return errors.Join(errs...)
}

func (c *agentConfig) apiAddr() string {
	return net.JoinHostPort(c.Bind, strconv.Itoa(c.HTTPPort))
}

// clusterConfig maps the agent configuration onto the cluster's.
func (c *agentConfig) clusterConfig() cluster.Config {
	return cluster.Config{
		Name: c.Name, DataDir: c.DataDir, BindAddr: c.Bind, RaftPort: c.RaftPort, GossipPort: c.GossipPort,
		APIAddr: c.apiAddr(), Kind: c.Kind, Join: c.Join, BootstrapExpect: c.BootstrapExpect,
		MaxVoters: c.MaxVoters, Raft: c.Raft, Gossip: c.Gossip, PeerToken: c.PeerToken,
		DownGrace: c.Failover.DownGrace, SilentGrace: c.Failover.SilentGrace, RefusedGrace: c.Failover.RefusedGrace, UpGrace: c.Failover.UpGrace, FreezeFraction: c.Failover.FreezeFraction,
		DeletedRetention:       c.DeletedRetention,
		TLS:                    c.tls,
		GossipKey:              c.GossipKey,
		DeadServerCleanupAfter: c.DeadServerCleanupAfter,
		Settings:               map[string]string{mirror.SettingLegacyInventory: strconv.FormatBool(c.LegacyInventory)},
		PeerPaths:              api.PeerPaths(),
		Version:                currentBuild().Version,
		QuotaDefaults:          maps.Clone(c.Quota),
	}
}
