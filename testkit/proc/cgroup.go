package proc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Cgroup2Mount returns where the cgroup2 hierarchy is mounted ("" when
// none is).
func Cgroup2Mount() string {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && fields[2] == "cgroup2" {
			return fields[1]
		}
	}
	return ""
}

// Cgroups is a directory of cgroup2 groups, one per process name: a
// process started in its group (Spec.Cgroup) is told apart from the
// others by what its sockets send (netem matches --path Rel(name)).
type Cgroups struct {
	Mount string // the cgroup2 mount
	Root  string // Mount/<rel root>
	rel   string
}

// NewCgroups creates <mount>/<name> with a child per process name.
func NewCgroups(name string, procs ...string) (*Cgroups, error) {
	mount := Cgroup2Mount()
	if mount == "" {
		return nil, errors.New("no cgroup2 hierarchy is mounted")
	}
	return newCgroupsIn(mount, name, procs...)
}

// newCgroupsIn is NewCgroups under the cgroup2 hierarchy mounted at mount.
func newCgroupsIn(mount, name string, procs ...string) (*Cgroups, error) {
	c := &Cgroups{Mount: mount, Root: filepath.Join(mount, name), rel: name}
	for _, p := range procs {
		if err := os.MkdirAll(filepath.Join(c.Root, p), 0o755); err != nil {
			c.Remove()
			return nil, fmt.Errorf("cgroup for %s: %w", p, err)
		}
	}
	return c, nil
}

// Dir is the absolute directory of name's group (for Spec.Cgroup).
func (c *Cgroups) Dir(name string) string { return filepath.Join(c.Root, name) }

// Rel is name's group relative to the mount (for an iptables cgroup match).
func (c *Cgroups) Rel(name string) string { return c.rel + "/" + name }

// Remove deletes the groups (they must be empty: stop the processes first).
func (c *Cgroups) Remove() error {
	dirs, err := os.ReadDir(c.Root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var errs []error
	for _, d := range dirs {
		if d.IsDir() {
			if err := os.Remove(filepath.Join(c.Root, d.Name())); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := os.Remove(c.Root); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// cpuPeriod is the CFS period of LimitCPU's quota, in µs.
const cpuPeriod = 100000

// LimitCPU holds name's group to percent % of one CPU, a quota of every
// 100 ms CFS period (cgroup v2's cpu.max), until lift is called. The
// group's cpu.stat counts the periods it was throttled in.
func (c *Cgroups) LimitCPU(name string, percent int) (lift func() error, err error) {
	if percent < 1 || percent > 100 {
		return nil, fmt.Errorf("a CPU share of %d%%: give 1 to 100", percent)
	}
	if _, err := c.EnableCPU(); err != nil {
		return nil, err
	}
	max := filepath.Join(c.Dir(name), "cpu.max")
	if err := writeCgroupFile(max, fmt.Sprintf("%d %d", cpuPeriod*percent/100, cpuPeriod)); err != nil {
		return nil, err
	}
	return func() error { return writeCgroupFile(max, fmt.Sprintf("max %d", cpuPeriod)) }, nil
}

// EnableCPU gives the groups of c the cpu controller: "+cpu" goes into the
// cgroup.subtree_control of each group from the mount down to c.Root that
// does not pass it on yet. It returns those it wrote to. Under cgroup v2's
// "no internal processes" rule a group other than the root can pass a
// controller on only while it holds no process itself: c.Root never does
// (the processes are in the groups of Dir), an ancestor may.
func (c *Cgroups) EnableCPU() (enabled []string, err error) {
	avail, err := os.ReadFile(filepath.Join(c.Mount, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("read the controllers of the cgroup2 hierarchy: %w", err)
	}
	if !slices.Contains(strings.Fields(string(avail)), "cpu") {
		return nil, fmt.Errorf("the cgroup2 hierarchy at %s has no cpu controller (it has %q): the controller is bound to a cgroup v1 hierarchy", c.Mount, strings.TrimSpace(string(avail)))
	}
	rel, err := filepath.Rel(c.Mount, c.Root)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, fmt.Errorf("%s is not below the cgroup2 mount %s", c.Root, c.Mount)
	}
	dir := c.Mount
	for _, part := range append([]string{"."}, strings.Split(rel, "/")...) {
		dir = filepath.Join(dir, part)
		ctl := filepath.Join(dir, "cgroup.subtree_control")
		on, err := os.ReadFile(ctl)
		if err != nil {
			return enabled, fmt.Errorf("read the controllers %s passes on: %w", dir, err)
		}
		if slices.Contains(strings.Fields(string(on)), "cpu") {
			continue
		}
		err = writeCgroupFile(ctl, "+cpu")
		if errors.Is(err, syscall.EBUSY) && dir == c.Mount {
			// The mount is the root of a cgroup namespace (a container),
			// which, unlike the real root, may not pass a controller on
			// while it holds processes: move them to a group of their own
			// first, as container runtimes' init scripts do.
			if merr := evacuate(c.Mount); merr != nil {
				err = fmt.Errorf("%w; moving its processes to a group of their own failed: %w", err, merr)
			} else {
				err = writeCgroupFile(ctl, "+cpu")
			}
		}
		if err != nil {
			return enabled, fmt.Errorf("%w (a group that holds processes itself cannot pass a controller on: run the tests from a group below %s, or enable cpu in it beforehand)", err, dir)
		}
		enabled = append(enabled, ctl)
	}
	return enabled, nil
}

// writeCgroupFile writes s to the cgroup interface file path, which must
// exist: a missing one (cpu.max before the cpu controller is enabled) is
// an error, not a new regular file.
func writeCgroupFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0) // O_TRUNC as a shell's > does: cgroupfs ignores it, a plain file (tests) needs it
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %q to %s: %w", s, path, err)
	}
	return f.Close()
}

// evacuatedGroup holds the processes evacuate moves out of a namespace's
// root group.
const evacuatedGroup = "corral-evacuated"

// evacuate moves every process of the group at dir into its child
// evacuatedGroup. Processes that cannot move (kernel threads) stay; it
// fails only when none could.
func evacuate(dir string) error {
	procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return err
	}
	leaf := filepath.Join(dir, evacuatedGroup)
	if err := os.MkdirAll(leaf, 0o755); err != nil {
		return err
	}
	moved, tried := 0, 0
	var last error
	for pid := range strings.FieldsSeq(string(procs)) {
		tried++
		if err := writeCgroupFile(filepath.Join(leaf, "cgroup.procs"), pid); err != nil {
			last = err
			continue
		}
		moved++
	}
	if tried > 0 && moved == 0 {
		return fmt.Errorf("no process of %s could move to %s: %w", dir, leaf, last)
	}
	return nil
}
