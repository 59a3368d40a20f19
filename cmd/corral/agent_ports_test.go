package main

import (
	"errors"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
)

// startTestAgent starts an agent of cfg on 127.0.0.1, on HTTP, raft and
// gossip ports chosen so that they are free when the agent binds them,
// and stops it when the test ends. A port the kernel hands out for ":0" comes
// from the range every outgoing connection takes its source port from:
// free when asked for, it may be some connection's (on a busy machine,
// any process's) by the time the agent binds it, and two ports asked for
// in a row may even be the same one. So each try holds its ports open
// together while it picks them (they differ), and a try the kernel
// refuses with "address already in use" starts again on new ports and a
// new data dir. cfg is left as the agent that started was configured; a
// configuration validate refuses fails the test.
func startTestAgent(t *testing.T, cfg *agentConfig, logger *slog.Logger) (*agent, error) {
	t.Helper()
	return startTestAgentOn(t, cfg, logger, freeTCPPorts)
}

// startTestAgentOn is startTestAgent with the port picker given: pick(t,
// n) returns n distinct ports.
func startTestAgentOn(t *testing.T, cfg *agentConfig, logger *slog.Logger, pick func(*testing.T, int) []int) (*agent, error) {
	t.Helper()
	var err error
	for try := 1; try <= 10; try++ {
		ports := pick(t, 3)
		cfg.HTTPPort, cfg.RaftPort, cfg.GossipPort = ports[0], ports[1], ports[2]
		if try > 1 {
			cfg.DataDir = t.TempDir() // nothing of the failed try's state
		}
		if err = cfg.validate(); err != nil {
			t.Fatalf("the test's agent configuration: %v", err)
		}
		var a *agent
		if a, err = startAgent(*cfg, logger); err == nil {
			t.Cleanup(func() { _ = a.stop() })
			return a, nil
		}
		if !portTaken(err) {
			return nil, err
		}
		t.Logf("start on ports %d/%d/%d: %v; again on others", cfg.HTTPPort, cfg.RaftPort, cfg.GossipPort, err)
	}
	return nil, err
}

// portTaken reports whether err is a bind refused because the port is in
// use (memberlist keeps only the message of its error).
func portTaken(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

// freeTCPPorts returns n distinct ports free on 127.0.0.1 for TCP now.
func freeTCPPorts(t *testing.T, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close() // held until all are chosen: no port twice
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports
}

// A port taken between its choice and the agent's bind (here by a
// listener; on a busy machine by any connection's source port) fails the
// agent's start with "address already in use"; startTestAgent starts it
// again on other ports.
func TestStartTestAgentTakesOtherPortsWhenOneIsTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	cfg := defaultAgentConfig()
	cfg.Name, cfg.DataDir, cfg.Bind, cfg.BootstrapExpect = "solo", t.TempDir(), "127.0.0.1", 1
	cfg.AdminTokens, cfg.PeerToken = []string{goodToken}, "peer-token-agent-0123456"

	first := cfg
	ps := freeTCPPorts(t, 2)
	first.HTTPPort, first.GossipPort, first.RaftPort = ps[0], ps[1], takenPort
	if err := first.validate(); err != nil {
		t.Fatal(err)
	}
	if a, err := startAgent(first, slog.New(slog.DiscardHandler)); err == nil {
		_ = a.stop()
		t.Fatal("an agent started on a raft port another socket holds")
	} else if !portTaken(err) {
		t.Fatalf("start on a taken raft port: %v, want address already in use", err)
	}

	tries := 0
	pick := func(t *testing.T, n int) []int {
		tries++
		ports := freeTCPPorts(t, n)
		if tries == 1 {
			ports[1] = takenPort // the raft port
		}
		return ports
	}
	if _, err := startTestAgentOn(t, &cfg, slog.New(slog.DiscardHandler), pick); err != nil {
		t.Fatalf("start: %v", err)
	}
	if tries != 2 || cfg.RaftPort == takenPort {
		t.Fatalf("%d tries, raft port %d (the taken one is %d): want a second try on another port", tries, cfg.RaftPort, takenPort)
	}
}
