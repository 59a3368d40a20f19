package cluster

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/corral-dev/corral/jepsen/history"
)

// UseBinary makes the agent run the binary at path, before its first
// start. Install replaces that file, as an operator's install does.
func (a *Agent) UseBinary(path string) { a.p.Path = path }

// Binary is the path the agent runs.
func (a *Agent) Binary() string { return a.p.Path }

// Install puts a copy of the binary src at dst (mode 0755) in one rename:
// a process running dst keeps its own, the next start runs the new one.
func Install(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp := dst + ".new"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// switchMsg starts the line a leader logs when the encoding of the log
// entries it writes changes (corral's cluster/encoding.go).
const switchMsg = "log entries are written in "

// EncodingSwitches reads every agent's log for the lines where its
// leader's entry encoding changed, as times since start.
func (c *Cluster) EncodingSwitches(start time.Time) ([]history.EncodingSwitch, error) {
	var out []history.EncodingSwitch
	var errs []error
	for _, a := range c.Agents {
		f, err := os.Open(a.LogPath())
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if !strings.Contains(string(line), switchMsg) {
				continue
			}
			var l struct {
				Time     time.Time `json:"time"`
				Msg      string    `json:"msg"`
				Encoding string    `json:"encoding"`
			}
			if json.Unmarshal(line, &l) != nil || !strings.HasPrefix(l.Msg, switchMsg) || l.Encoding == "" {
				continue
			}
			out = append(out, history.EncodingSwitch{Agent: a.Name, At: int64(l.Time.Sub(start)), Encoding: l.Encoding})
		}
		if err := sc.Err(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", a.LogPath(), err))
		}
		f.Close()
	}
	return out, errors.Join(errs...)
}
