package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// `corral sim ironic --network-interface flat --ports-per-node N` enrolls
// nodes of the flat network interface with N physical ports each, so that
// each VIF takes one, as a real Ironic's flat nodes do; --node-uuids gives
// the first ones their UUIDs (e.g. the hosts a Neutron has an agent for).
func TestSimIronicWiredNodes(t *testing.T) {
	const agentHost = "6fae68da-108b-4a9d-87c4-0000000000a1"
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	cmd := newSimCmd()
	cmd.SetArgs([]string{"ironic", "--listen", "127.0.0.1:0", "--nodes", "2", "--network-interface", "flat", "--ports-per-node", "3",
		"--node-uuids", agentHost})
	cmd.SetOut(pw)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx); pw.Close() }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("sim ironic: %v", err)
		}
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no URL printed: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	base := strings.TrimSpace(line)
	get := func(path string, v any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Header.Set("X-OpenStack-Ironic-API-Version", "1.82")
		c := http.Client{Timeout: 10 * time.Second}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}
	var nodes struct {
		Nodes []struct {
			UUID             string `json:"uuid"`
			NetworkInterface string `json:"network_interface"`
		} `json:"nodes"`
	}
	get("/v1/nodes?detail=true", &nodes)
	var ports struct {
		Ports []struct {
			NodeUUID string `json:"node_uuid"`
			Address  string `json:"address"`
		} `json:"ports"`
	}
	get("/v1/ports?detail=true", &ports)
	if len(nodes.Nodes) != 2 || len(ports.Ports) != 6 {
		t.Fatalf("%d nodes, %d ports; want 2 and 6", len(nodes.Nodes), len(ports.Ports))
	}
	uuids := map[string]bool{}
	for _, n := range nodes.Nodes {
		uuids[n.UUID] = true
		if n.NetworkInterface != "flat" {
			t.Fatalf("node %s has network interface %q", n.UUID, n.NetworkInterface)
		}
	}
	if !uuids[agentHost] || len(uuids) != 2 {
		t.Fatalf("nodes %v: want %s and another", uuids, agentHost)
	}
}

// A network interface the simulator does not have, a negative number of
// ports, a node UUID that is none, or more UUIDs than nodes, is refused
// before anything starts.
func TestSimIronicWiredNodesChecked(t *testing.T) {
	for _, args := range [][]string{
		{"--network-interface", "vlan"},
		{"--ports-per-node", "-1"},
		{"--node-uuids", "not-a-uuid"},
		{"--node-uuids", "6fae68da-108b-4a9d-87c4-0000000000a1,6fae68da-108b-4a9d-87c4-0000000000a2"},
		{"--node-uuids", "6fae68da-108b-4a9d-87c4-0000000000a1,,"},
	} {
		cmd := newSimCmd()
		cmd.SetArgs(append([]string{"ironic", "--listen", "127.0.0.1:0", "--nodes", "1"}, args...))
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.ExecuteContext(t.Context()); err == nil {
			t.Fatalf("%v accepted", args)
		}
	}
}
