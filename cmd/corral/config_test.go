package main

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/auth/keystone"
	"github.com/corral-dev/corral/cluster"
	"github.com/corral-dev/corral/cluster/tlsutil"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/ironic"
	"github.com/corral-dev/corral/neutron"
)

const goodToken = "admin-token-0001"

// testPeerToken is the peer token load gives an agent whose environment
// and configuration file set none (an explicit "" in env sets none).
const testPeerToken = "test-peer-token-0123456789"

// load runs loadAgentConfig with the given flags and environment.
func load(t *testing.T, args []string, env map[string]string) (agentConfig, error) {
	t.Helper()
	fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	registerAgentFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	if _, set := env["CORRAL_AUTH_PEER_TOKEN"]; !set && !fileSetsPeerToken(t, fs) {
		env = maps.Clone(env)
		if env == nil {
			env = map[string]string{}
		}
		env["CORRAL_AUTH_PEER_TOKEN"] = testPeerToken
	}
	return loadAgentConfig(fs, func(k string) string { return env[k] })
}

func fileSetsPeerToken(t *testing.T, fs *pflag.FlagSet) bool {
	t.Helper()
	path, _ := fs.GetString("config")
	if path == "" {
		return false
	}
	raw, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(raw), "peer_token")
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "corral.ini")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustLoad(t *testing.T, args []string, env map[string]string) agentConfig {
	t.Helper()
	c, err := load(t, args, env)
	if err != nil {
		t.Fatalf("load %v %v: %v", args, env, err)
	}
	return c
}

func TestConfigDefaults(t *testing.T) {
	c := mustLoad(t, []string{"--name", "n1"}, map[string]string{"CORRAL_ADMIN_TOKEN": goodToken})
	want := defaultAgentConfig()
	want.Name = "n1"
	want.AdminTokens = []string{goodToken}
	want.PeerToken = testPeerToken
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("defaults:\n got %+v\nwant %+v", c, want)
	}
	if c.HTTPPort != 7480 || c.RaftPort != 7481 || c.GossipPort != 7482 || c.Bind != "127.0.0.1" || c.LogLevel != "info" {
		t.Errorf("defaults: %+v", c)
	}
	if c.apiAddr() != "127.0.0.1:7480" {
		t.Errorf("api addr %q", c.apiAddr())
	}
	cc := c.clusterConfig()
	if cc.Name != "n1" || cc.RaftPort != 7481 || cc.APIAddr != "127.0.0.1:7480" || cc.PeerToken != testPeerToken || cc.Raft != cluster.DefaultRaftTimings() {
		t.Errorf("cluster config: %+v", cc)
	}
}

func TestConfigPrecedence(t *testing.T) {
	file := writeConfig(t, `
name = from-file
log_level = debug

[api]
port = 8000

[raft]
port = 8001

[gossip]
port = 8002

[auth]
admin_tokens = `+goodToken+`
`)
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want func(c agentConfig) bool
	}{
		{"file only", nil, nil, func(c agentConfig) bool {
			return c.Name == "from-file" && c.RaftPort == 8001 && c.HTTPPort == 8000 && c.GossipPort == 8002 && c.LogLevel == "debug"
		}},
		{"env over file", nil, map[string]string{"CORRAL_RAFT_PORT": "9001", "CORRAL_NAME": "from-env", "CORRAL_LOG_LEVEL": "warn"},
			func(c agentConfig) bool {
				return c.Name == "from-env" && c.RaftPort == 9001 && c.HTTPPort == 8000 && c.LogLevel == "warn"
			}},
		{"flag over env and file", []string{"--raft-port", "10001", "--name", "from-flag"},
			map[string]string{"CORRAL_RAFT_PORT": "9001", "CORRAL_NAME": "from-env", "CORRAL_API_PORT": "9000"},
			func(c agentConfig) bool {
				return c.Name == "from-flag" && c.RaftPort == 10001 && c.HTTPPort == 9000 && c.GossipPort == 8002
			}},
		{"flag over file", []string{"--gossip-port=10002", "--log-level", "error"}, nil, func(c agentConfig) bool {
			return c.GossipPort == 10002 && c.LogLevel == "error" && c.RaftPort == 8001
		}},
		{"empty env is unset", nil, map[string]string{"CORRAL_RAFT_PORT": "", "CORRAL_NAME": ""}, func(c agentConfig) bool {
			return c.Name == "from-file" && c.RaftPort == 8001
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := mustLoad(t, append([]string{"--config", file}, c.args...), c.env)
			if !c.want(got) {
				t.Errorf("got %+v", got)
			}
		})
	}

	t.Run("bool flag", func(t *testing.T) {
		on := writeConfig(t, "leave_on_terminate = true\n[auth]\nadmin_tokens = "+goodToken+"\n")
		if c := mustLoad(t, []string{"--config", on}, nil); !c.LeaveOnTerminate {
			t.Error("file leave_on_terminate = true not applied")
		}
		if c := mustLoad(t, []string{"--config", on, "--leave-on-terminate=false"}, nil); c.LeaveOnTerminate {
			t.Error("--leave-on-terminate=false did not override the file")
		}
		if c := mustLoad(t, []string{"--config", on}, map[string]string{"CORRAL_LEAVE_ON_TERMINATE": "false"}); c.LeaveOnTerminate {
			t.Error("CORRAL_LEAVE_ON_TERMINATE=false did not override the file")
		}
		if c := mustLoad(t, []string{"--leave-on-terminate", "--name", "n"}, map[string]string{"CORRAL_ADMIN_TOKEN": goodToken}); !c.LeaveOnTerminate {
			t.Error("--leave-on-terminate not applied")
		}
	})
}

func TestConfigJoinReplaces(t *testing.T) {
	file := writeConfig(t, "[gossip]\njoin = 10.0.0.1:7482, 10.0.0.2:7482\n[auth]\nadmin_tokens = "+goodToken+"\n")
	env := map[string]string{"CORRAL_GOSSIP_JOIN": "10.0.0.3:7482"}
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want []string
	}{
		{"file", nil, nil, []string{"10.0.0.1:7482", "10.0.0.2:7482"}},
		{"env replaces file", nil, env, []string{"10.0.0.3:7482"}},
		{"flags replace env and file", []string{"--join", "10.0.0.4:7482", "--join=10.0.0.5:7482"}, env, []string{"10.0.0.4:7482", "10.0.0.5:7482"}},
		{"one flag", []string{"--join", "10.0.0.6:7482"}, nil, []string{"10.0.0.6:7482"}},
		{"comma in a flag", []string{"--join", "10.0.0.7:1,10.0.0.8:2"}, nil, []string{"10.0.0.7:1", "10.0.0.8:2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := mustLoad(t, append([]string{"--config", file, "--name", "n"}, c.args...), c.env)
			if !slices.Equal(got.Join, c.want) {
				t.Errorf("join = %v, want %v", got.Join, c.want)
			}
			if !slices.Equal(got.clusterConfig().Join, c.want) {
				t.Errorf("cluster join = %v, want %v", got.clusterConfig().Join, c.want)
			}
		})
	}
}

func TestConfigAdminTokenEnv(t *testing.T) {
	file := writeConfig(t, "name = n\n[auth]\nadmin_tokens = file-token-0001, file-token-0002\nreader_tokens = read-token-0001\n")
	cases := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"file", nil, []string{"file-token-0001", "file-token-0002"}},
		{"CORRAL_ADMIN_TOKEN adds", map[string]string{"CORRAL_ADMIN_TOKEN": "env-token-0001"},
			[]string{"file-token-0001", "file-token-0002", "env-token-0001"}},
		{"CORRAL_AUTH_ADMIN_TOKENS replaces, CORRAL_ADMIN_TOKEN adds",
			map[string]string{"CORRAL_AUTH_ADMIN_TOKENS": "list-token-0001,list-token-0002", "CORRAL_ADMIN_TOKEN": "env-token-0001"},
			[]string{"list-token-0001", "list-token-0002", "env-token-0001"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := mustLoad(t, []string{"--config", file}, c.env)
			if !slices.Equal(got.AdminTokens, c.want) {
				t.Errorf("admin tokens = %v, want %v", got.AdminTokens, c.want)
			}
			if !slices.Equal(got.ReaderTokens, []string{"read-token-0001"}) {
				t.Errorf("reader tokens = %v", got.ReaderTokens)
			}
			if got.PeerToken != testPeerToken {
				t.Errorf("peer token = %q: it is never an admin token", got.PeerToken)
			}
		})
	}
	c := mustLoad(t, []string{"--name", "n"}, map[string]string{"CORRAL_ADMIN_TOKEN": goodToken, "CORRAL_AUTH_PEER_TOKEN": "peer-token-0123456"})
	if !slices.Equal(c.AdminTokens, []string{goodToken}) || c.PeerToken != "peer-token-0123456" {
		t.Errorf("admin tokens %v, peer token %q", c.AdminTokens, c.PeerToken)
	}
}

func TestConfigErrors(t *testing.T) {
	ok := map[string]string{"CORRAL_ADMIN_TOKEN": goodToken, "CORRAL_NAME": "n"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{"CORRAL_NAME": "n"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		name string
		file string // config file text, if any
		args []string
		env  map[string]string
		want []string // substrings of the error, all required
		not  []string // substrings that must not appear
	}{
		{name: "unknown key", file: "[raft]\nelection_timout = 1s\n", env: ok,
			want: []string{"unknown option [raft] election_timout", "did you mean election_timeout?"}},
		{name: "unknown key in DEFAULT", file: "data-dir = /tmp/x\n", env: ok,
			want: []string{"unknown option [DEFAULT] data-dir", "did you mean data_dir?"}},
		{name: "key in the wrong section", file: "[api]\njoin = 10.0.0.1:1\n", env: ok,
			want: []string{"unknown option [api] join", "join belongs in [gossip]"}, not: []string{"did you mean"}},
		{name: "key of several sections in DEFAULT", file: "port = 7000\n", env: ok,
			want: []string{"unknown option [DEFAULT] port", "port belongs in [api] or [raft] or [gossip]"}},
		{name: "unknown key close to none", file: "[raft]\nzzzzzz = 1\n", env: ok,
			want: []string{"unknown option [raft] zzzzzz", "known keys in [raft]: port, bootstrap_expect, max_voters"},
			not:  []string{"did you mean"}},
		{name: "unknown key in a one-key section", file: "[telemetry]\nlisten = x\n", env: ok,
			want: []string{"unknown option [telemetry] listen", "known keys in [telemetry]: metrics_require_auth)"}, not: []string{"did you mean"}},
		{name: "unknown section", file: "[gosip]\nport = 7000\n", env: ok,
			want: []string{"unknown option [gosip] port", "[gosip] is not a section", "known sections: DEFAULT, api, auth, failover, glance, gossip, hypervisor, "}},
		{name: "section names are case-sensitive", file: "[Raft]\nport = 7000\n", env: ok,
			want: []string{"[Raft] is not a section"}},
		{name: "bad duration", file: "[raft]\nheartbeat_timeout = 5\n", env: ok,
			want: []string{"[raft] heartbeat_timeout", `"5" is not a duration`}},
		{name: "negative duration", file: "[gossip]\nprobe_interval = -1s\n", env: ok,
			want: []string{"[gossip] probe_interval", "must be positive"}},
		{name: "bad orphan grace", file: "[ironic]\norphan_grace = soon\n", env: ok,
			want: []string{"[ironic] orphan_grace", `"soon" is not a duration`}},
		{name: "bad integer", file: "[api]\nport = eighty\n", env: ok,
			want: []string{"[api] port", `"eighty" is not an integer`}},
		{name: "port out of range in file", file: "[gossip]\nport = 70000\n", env: ok,
			want: []string{"[gossip] port", "70000 is out of range 1-65535"}},
		{name: "port out of range in env", env: with("CORRAL_ADMIN_TOKEN", goodToken, "CORRAL_API_PORT", "0"),
			want: []string{"environment CORRAL_API_PORT", "0 is out of range 1-65535"}},
		{name: "port out of range in flag", args: []string{"--raft-port", "65536"}, env: ok,
			want: []string{"flag --raft-port", "65536 is out of range"}},
		{name: "bad bool", file: "leave_on_terminate = maybe\n", env: ok,
			want: []string{"leave_on_terminate", `"maybe" is not true or false`}},
		{name: "zero snapshot threshold", file: "[raft]\nsnapshot_threshold = 0\n", env: ok,
			want: []string{"snapshot_threshold", "not a positive integer"}},
		{name: "bind not an IP", args: []string{"--bind", "localhost"}, env: ok,
			want: []string{`bind address "localhost" is not an IP address`}},
		{name: "equal ports", args: []string{"--http-port", "7000", "--raft-port", "7000"}, env: ok,
			want: []string{"ports must differ", "(7000)"}},
		{name: "equal default port", args: []string{"--gossip-port", "7481"}, env: ok,
			want: []string{"ports must differ"}},
		{name: "short token", env: with("CORRAL_ADMIN_TOKEN", "abc1234"),
			want: []string{`token "abc…" is too short`, "at least 8"}, not: []string{"abc1234"}},
		{name: "short reader token", env: with("CORRAL_ADMIN_TOKEN", goodToken, "CORRAL_AUTH_READER_TOKENS", "rdr"),
			want: []string{"too short"}, not: []string{`"rdr"`}},
		{name: "no admin token", env: with(),
			want: []string{"no admin token", "CORRAL_ADMIN_TOKEN"}},
		{name: "reader token only", env: with("CORRAL_AUTH_READER_TOKENS", "reader-token-01"),
			want: []string{"no admin token"}},
		{name: "bad log level", args: []string{"--log-level", "verbose"}, env: ok,
			want: []string{`log level "verbose" is not one of debug, info, warn, error`}},
		{name: "bad log format", env: with("CORRAL_ADMIN_TOKEN", goodToken, "CORRAL_LOG_FORMAT", "xml"),
			want: []string{`log format "xml"`}},
		{name: "bad join address", args: []string{"--join", "10.0.0.1"}, env: ok,
			want: []string{`join address "10.0.0.1" is not IP:PORT`}},
		{name: "bad kind", args: []string{"--kind", "vm"}, env: ok,
			want: []string{`host kind "vm" is unknown`}},
		{name: "bad name", args: []string{"--name", "bad name!"}, env: ok,
			want: []string{`name "bad name!" is not a valid host name`}},
		{name: "lease longer than heartbeat", file: "[raft]\nheartbeat_timeout = 100ms\nelection_timeout = 100ms\nleader_lease_timeout = 200ms\n", env: ok,
			want: []string{"leader lease timeout 200ms must not exceed the heartbeat timeout 100ms"}},
		{name: "silent grace within the leader's pings", file: "[failover]\nsilent_grace = 300ms\n", env: ok,
			want: []string{"failover silent grace 300ms must be at least 600ms", "off"}},
		{name: "bootstrap expect out of range", args: []string{"--bootstrap-expect", "100"}, env: ok,
			want: []string{"flag --bootstrap-expect", "100 is out of range 0-99"}},
		{name: "several parse problems at once",
			file: "[raft]\nelection_timout = 1s\nheartbeat_timeout = soon\n[api]\nport = -1\n",
			args: []string{"--gossip-port", "x"}, env: with("CORRAL_ADMIN_TOKEN", goodToken, "CORRAL_RAFT_PORT", "99999"),
			want: []string{"election_timout", "did you mean election_timeout?", `"soon" is not a duration`,
				"[api] port: -1 is out of range", "environment CORRAL_RAFT_PORT: 99999", `flag --gossip-port: "x" is not an integer`}},
		{name: "several validation problems at once", args: []string{"--bind", "nowhere", "--log-level", "loud", "--http-port", "7481"},
			env:  with(),
			want: []string{"bind address", "log level", "ports must differ", "no admin token"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if c.file != "" {
				args = append([]string{"--config", writeConfig(t, c.file)}, args...)
			}
			_, err := load(t, args, c.env)
			if err == nil {
				t.Fatalf("no error; want one mentioning %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if n := strings.Count(err.Error(), "bind address"); n > 1 {
				t.Errorf("the bind address is reported %d times:\n%v", n, err)
			}
			for _, n := range c.not {
				if strings.Contains(err.Error(), n) {
					t.Errorf("error contains %q:\n%v", n, err)
				}
			}
		})
	}

	t.Run("missing file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "absent.ini")
		_, err := load(t, []string{"--config", p}, ok)
		if err == nil || !strings.Contains(err.Error(), "read config file "+p) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("unparsable file", func(t *testing.T) {
		_, err := load(t, []string{"--config", writeConfig(t, "[raft\nport = 1\n")}, ok)
		if err == nil || !strings.Contains(err.Error(), "read config file") {
			t.Fatalf("got %v", err)
		}
	})
}

const fullExample = `# corral agent configuration
name = compute-1
data_dir = /srv/corral
host_kind = hypervisor
log_level = warn
log_format = json
deleted_retention = 12h
bind = 10.1.2.3
leave_on_terminate = true
enable_instance_password = false

[api]
port = 8480
max_body_bytes = 2097152
write_rate = 5
write_burst = 10

[telemetry]
metrics_require_auth = true

[raft]
dead_server_cleanup_after = 90s
port = 8481
bootstrap_expect = 3
max_voters = 7
heartbeat_timeout = 1s
election_timeout = 1500ms
leader_lease_timeout = 500ms
commit_timeout = 50ms
snapshot_interval = 2m
snapshot_threshold = 4096
trailing_logs = 2048
apply_timeout = 8s

[gossip]
port = 8482
join = 10.1.2.4:8482, 10.1.2.5:8482
probe_interval = 1s
probe_timeout = 400ms
suspicion_mult = 5
gossip_interval = 200ms
push_pull_interval = 30s
encrypt = 3wLKQLmwNXe2aMW0MmFZCkhp7kY1tOJSXSL4uEl9i7Q=

[auth]
admin_tokens = admin-secret-0001, admin-secret-0002
reader_tokens = reader-secret-0001
peer_token = peer-secret-00001
strategy = token

# Read with strategy = keystone only.
[keystone_authtoken]
auth_url = http://10.1.2.20:5000/v3
www_authenticate_uri = http://keystone.example.com:5000
username = corral
password = service-secret
project_name = service
user_domain_name = Default
project_domain_name = Default
token_cache_time = 120

# TLS is off while the three files are empty (TestTLSCreateAndConfig sets them).
[tls]
ca_file =
cert_file =
key_file =
verify_incoming = true
verify_outgoing = false

[ironic]
url = http://10.1.2.10:6385
reservation = allocations
sync_interval = 10s
full_sync_interval = 15m
request_timeout = 20s
deploy_timeout = 45m
workers = 16
max_version = 1.80
deploy_wait = poll
orphan_grace = 1m
auth_type = none
auth_url = http://10.1.2.20:5000/v3
username = corral
password = service-secret
project_name = service
user_domain_name = Default
project_domain_name = Default
region_name = RegionOne
valid_interfaces = internal
baremetal_proxy_auth = service

[glance]
url = http://10.1.2.30:9292
auth_type = password
auth_url = http://10.1.2.20:5000/v3
username = corral-images
password = glance-secret
project_name = service
user_domain_name = Default
project_domain_name = Default

[neutron]
auth_type = password
auth_url = http://10.1.2.20:5000/v3
username = corral-network
password = neutron-secret
project_name = service
user_domain_name = Default
project_domain_name = Default
region_name = RegionOne
valid_interfaces = internal,public
endpoint_override = http://10.1.2.40:9696
port_reap_interval = 2m
port_reap_grace = 30m

[failover]
down_grace = 3s
silent_grace = 700ms
refused_grace = 2s
up_grace = 2s
freeze_fraction = 0.4

[workarounds]
report_ironic_standard_resource_class_inventory = true

[hypervisor]
vcpus = 32
memory_mb = 131072
disk_gb = 900
cpu_allocation_ratio = 8
ram_allocation_ratio = 1.2
disk_allocation_ratio = 1.1

[quota]
instances = 40
cores = 80
ram = -1
metadata_items = 64
injected_files = 0
injected_file_content_bytes = 4096
injected_file_path_length = 128
key_pairs = 20
server_groups = 4
server_group_members = 8
`

func TestConfigOrphanGraceOff(t *testing.T) {
	env := map[string]string{"CORRAL_ADMIN_TOKEN": goodToken, "CORRAL_NAME": "n"}
	c := mustLoad(t, []string{"--config", writeConfig(t, "[ironic]\norphan_grace = off\n")}, env)
	if c.Ironic.OrphanGrace >= 0 {
		t.Fatalf("orphan_grace = off gave %v, want negative (never)", c.Ironic.OrphanGrace)
	}
	if d := mustLoad(t, nil, env); d.Ironic.OrphanGrace != 0 {
		t.Fatalf("default orphan grace %v, want 0 (twice the sync interval)", d.Ironic.OrphanGrace)
	}
}

func TestConfigFullExample(t *testing.T) {
	c := mustLoad(t, []string{"--config", writeConfig(t, fullExample)}, nil)
	want := agentConfig{
		Name: "compute-1", DataDir: "/srv/corral", Kind: "hypervisor", LogLevel: "warn", LogFormat: "json",
		Bind: "10.1.2.3", HTTPPort: 8480, RaftPort: 8481, GossipPort: 8482,
		Join: []string{"10.1.2.4:8482", "10.1.2.5:8482"}, BootstrapExpect: 3, MaxVoters: 7, LeaveOnTerminate: true,
		Raft: cluster.RaftTimings{
			HeartbeatTimeout: time.Second, ElectionTimeout: 1500 * time.Millisecond, LeaderLeaseTimeout: 500 * time.Millisecond,
			CommitTimeout: 50 * time.Millisecond, SnapshotInterval: 2 * time.Minute, SnapshotThreshold: 4096,
			TrailingLogs: 2048, ApplyTimeout: 8 * time.Second,
		},
		Gossip: cluster.GossipTimings{
			ProbeInterval: time.Second, ProbeTimeout: 400 * time.Millisecond, SuspicionMult: 5,
			GossipInterval: 200 * time.Millisecond, PushPullInterval: 30 * time.Second,
		},
		AdminTokens:  []string{"admin-secret-0001", "admin-secret-0002"},
		ReaderTokens: []string{"reader-secret-0001"},
		PeerToken:    "peer-secret-00001",
		Ironic: ironicConfig{URL: "http://10.1.2.10:6385", Reservation: "allocations", SyncInterval: 10 * time.Second,
			FullSyncInterval: 15 * time.Minute, RequestTimeout: 20 * time.Second, DeployTimeout: 45 * time.Minute, Workers: 16, MaxVersion: "1.80",
			OrphanGrace: time.Minute, DeployWait: "poll", Auth: ironic.Auth{Type: "none", AuthURL: "http://10.1.2.20:5000/v3",
				Username: "corral", Password: "service-secret", ProjectName: "service", UserDomainName: "Default",
				ProjectDomainName: "Default", RegionName: "RegionOne", Interface: "internal"}, ProxyAuth: "service"},
		Glance: glanceConfig{URL: "http://10.1.2.30:9292", AuthType: "password", Service: keystone.Options{
			AuthURL: "http://10.1.2.20:5000/v3", Username: "corral-images", Password: "glance-secret", ProjectName: "service",
			UserDomainName: "Default", ProjectDomainName: "Default"}},
		Neutron: neutron.Options{AuthType: "password", AuthURL: "http://10.1.2.20:5000/v3", Username: "corral-network",
			Password: "neutron-secret", ProjectName: "service", UserDomainName: "Default", ProjectDomainName: "Default",
			RegionName: "RegionOne", ValidInterfaces: "internal,public", EndpointOverride: "http://10.1.2.40:9696"},
		NeutronReap:  neutronReapConfig{Interval: 2 * time.Minute, Grace: 30 * time.Minute},
		AuthStrategy: "token",
		Keystone: keystone.Options{AuthURL: "http://10.1.2.20:5000/v3", WWWAuthenticateURI: "http://keystone.example.com:5000",
			Username: "corral", Password: "service-secret", ProjectName: "service", UserDomainName: "Default",
			ProjectDomainName: "Default", TokenCacheTime: 120 * time.Second},
		DeletedRetention: 12 * time.Hour,
		Failover:         failoverConfig{DownGrace: 3 * time.Second, SilentGrace: 700 * time.Millisecond, RefusedGrace: 2 * time.Second, UpGrace: 2 * time.Second, FreezeFraction: 0.4},
		Hypervisor: hypervisorConfig{VCPUs: 32, MemoryMB: 131072, DiskGB: 900, CPUAllocationRatio: 8,
			RAMAllocationRatio: 1.2, DiskAllocationRatio: 1.1},
		LegacyInventory:        true,
		TLS:                    tlsutil.Files{VerifyIncoming: true},
		GossipKey:              "3wLKQLmwNXe2aMW0MmFZCkhp7kY1tOJSXSL4uEl9i7Q=",
		Limits:                 core.Limits{MaxBodyBytes: 2 << 20, WriteRate: 5, WriteBurst: 10},
		MetricsRequireAuth:     true,
		DeadServerCleanupAfter: 90 * time.Second,
		Quota: quotaWith(fsm.QuotaInstances, 40, fsm.QuotaCores, 80, fsm.QuotaRAM, -1, fsm.QuotaMetadataItems, 64,
			fsm.QuotaInjectedFiles, 0, fsm.QuotaInjectedFileContentBytes, 4096, fsm.QuotaInjectedFilePathBytes, 128,
			fsm.QuotaKeyPairs, 20, fsm.QuotaServerGroups, 4, fsm.QuotaServerGroupMembers, 8),
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("full example:\n got %+v\nwant %+v", c, want)
	}
	cc := c.clusterConfig()
	if cc.APIAddr != "10.1.2.3:8480" || cc.PeerToken != "peer-secret-00001" || cc.Kind != "hypervisor" ||
		cc.BindAddr != "10.1.2.3" || cc.MaxVoters != 7 || cc.BootstrapExpect != 3 || cc.Raft != want.Raft || cc.Gossip != want.Gossip {
		t.Errorf("cluster config: %+v", cc)
	}

	// Every option is documented by the example.
	for _, o := range options {
		key := o.key + " ="
		if !strings.Contains(fullExample, "\n"+key) {
			t.Errorf("option [%s] %s is not in the full example", o.section, o.key)
		}
	}
}
