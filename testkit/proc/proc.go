package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// KillWait is how long Kill waits for a killed process to exit.
const KillWait = 10 * time.Second

// Spec says how to run a process.
type Spec struct {
	Name    string   // for messages
	Path    string   // the binary
	Args    []string // its arguments
	Env     []string // KEY=VALUE added to the test's environment (the last value of a key wins)
	LogPath string   // stdout and stderr are appended here
	UID     int      // run as this uid and gid (0: as ourselves)
	Cgroup  string   // start in this cgroup2 directory (absolute path; "": ours)
	// Banner, when set, is appended to the log before each start (e.g. a
	// JSON line naming the start) so a reader can tell runs apart.
	Banner func(start int) string
}

// Proc is one process that can be started again after it exits. Its
// fields are read at each Start: change Args or Env between runs.
type Proc struct {
	Spec

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	paused bool
	starts int
}

// New returns a process that is not started yet.
func New(s Spec) *Proc { return &Proc{Spec: s} }

// Start launches the process; a running process is left alone. It runs in
// a process group of its own, and is killed if the test process dies.
func (p *Proc) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !closed(p.done) {
		return nil
	}
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Env = append(os.Environ(), p.Env...)
	logf, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("log of %s: %w", p.Name, err)
	}
	p.starts++
	if p.Banner != nil {
		fmt.Fprintln(logf, p.Banner(p.starts))
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if p.UID != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(p.UID), Gid: uint32(p.UID)}
	}
	if p.Cgroup != "" {
		cg, err := os.Open(p.Cgroup)
		if err != nil {
			logf.Close()
			return fmt.Errorf("cgroup of %s: %w", p.Name, err)
		}
		defer cg.Close()
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(cg.Fd())
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	p.cmd, p.done, p.paused = cmd, done, false
	return nil
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Starts counts the starts so far.
func (p *Proc) Starts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts
}

// Pid is the process id of the current (or last) run; 0 before the first.
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Running reports whether the process is alive (a paused one is).
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !closed(p.done)
}

// Paused reports whether the process is alive and stopped by Pause.
func (p *Proc) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused && p.cmd != nil && !closed(p.done)
}

// ExitCode is the exit status of the last run (-1: killed by a signal or
// still running).
func (p *Proc) ExitCode() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.ProcessState == nil || !closed(p.done) {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// Signal sends sig to the running process; ErrNotRunning when it is not.
func (p *Proc) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil || closed(p.done) {
		return fmt.Errorf("%s to %s: %w", sigName(sig), p.Name, ErrNotRunning)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%s to %s: %w", sigName(sig), p.Name, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		p.paused = true
	case syscall.SIGCONT, syscall.SIGKILL:
		p.paused = false
	}
	return nil
}

func sigName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGSTOP:
		return "SIGSTOP"
	case syscall.SIGCONT:
		return "SIGCONT"
	}
	return sig.String()
}

// Wait waits up to timeout for the process to exit; false on timeout.
func (p *Proc) Wait(timeout time.Duration) bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return true
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// Kill sends SIGKILL and waits for the exit: ErrNotRunning when the
// process was not running, an error when it did not exit within KillWait.
func (p *Proc) Kill() error {
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	if !p.Wait(KillWait) {
		return fmt.Errorf("%s did not exit within %s of SIGKILL", p.Name, KillWait)
	}
	return nil
}

// Stop resumes the process if paused, sends SIGTERM and waits up to
// timeout for it to exit, then kills it. It returns ErrNotRunning when
// the process was not running; a stop that needed SIGKILL is not an error.
func (p *Proc) Stop(timeout time.Duration) error {
	_ = p.Signal(syscall.SIGCONT)
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	if p.Wait(timeout) {
		return nil
	}
	if err := p.Kill(); err != nil && !errors.Is(err, ErrNotRunning) {
		return err
	}
	return nil
}

// stopWait is how long Pause waits for the kernel to show the process
// stopped.
const stopWait = 5 * time.Second

// Pause sends SIGSTOP and waits until the kernel shows the process
// stopped; an error when it is not running or did not stop.
func (p *Proc) Pause() error {
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	pid := p.Pid()
	deadline := time.Now().Add(stopWait)
	for {
		st, err := state(pid)
		if err != nil {
			return fmt.Errorf("pause %s: %w", p.Name, err)
		}
		if st == 'T' || st == 't' {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pause %s: still in state %c %s after SIGSTOP", p.Name, st, stopWait)
		}
		time.Sleep(5 * time.Millisecond) // pacing the poll of /proc
	}
}

// Resume sends SIGCONT; ErrNotRunning when the process is not running.
func (p *Proc) Resume() error { return p.Signal(syscall.SIGCONT) }

// state reads a process's state letter from /proc/<pid>/stat.
func state(pid int) (byte, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// pid (comm) S ...: the comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0, fmt.Errorf("unreadable /proc/%d/stat", pid)
	}
	return s[i+2], nil
}
