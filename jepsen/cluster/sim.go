package cluster

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/corral-dev/corral/testkit/proc"
)

// StartSim runs `corral sim ironic` as its own process on a free port of
// 127.0.0.1 and returns it with its URL once it listens. Deploys, rebuilds
// and undeploys take deploy, power changes power.
func StartSim(ctx context.Context, bin string, nodes int, rc, logPath string, deploy, power time.Duration) (*proc.Proc, string, error) {
	port, err := proc.FreePort("127.0.0.1")
	if err != nil {
		return nil, "", err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args := []string{"sim", "ironic", "--listen", addr, "--nodes", strconv.Itoa(nodes),
		"--resource-class", rc, "--deploy-delay", deploy.String()}
	if power > 0 {
		args = append(args, "--power-delay", power.String())
	}
	p := proc.New(proc.Spec{Name: "ironic-sim", Path: bin, LogPath: logPath, Args: args})
	if err := p.Start(); err != nil {
		return nil, "", err
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := proc.WaitPort(wctx, addr); err != nil {
		_ = p.Kill()
		return nil, "", fmt.Errorf("the Ironic simulator does not listen (see %s): %w", logPath, err)
	}
	return p, "http://" + addr, nil
}
