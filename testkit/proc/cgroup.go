package proc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
