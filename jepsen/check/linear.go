package check

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/corral-dev/corral/jepsen/history"
)

// LinResult is the verdict of the linearizability checker.
type LinResult struct {
	Valid   bool           `json:"valid"`
	Reads   string         `json:"reads"` // which reads were checked: linearizable, or all
	Keys    int            `json:"keys"`
	Ops     int            `json:"ops"`
	Illegal []LinAnomaly   `json:"illegal,omitempty"`
	Causes  map[string]int `json:"causes,omitempty"`  // illegal servers by cause
	Unknown []string       `json:"unknown,omitempty"` // keys whose check timed out
}

// LinAnomaly is one server whose history has no linearization.
type LinAnomaly struct {
	Key     string   `json:"key"`
	IDs     []string `json:"ids"`
	Cause   string   `json:"cause"` // stale-delete-404 when the history is legal without the deletes answered 404, else other
	History []string `json:"history"`
	Plot    string   `json:"visualization,omitempty"`
}

const never int64 = math.MaxInt64 / 4 // return time of an operation whose outcome is unknown

// linOps builds each server's operations. Writes are always included;
// reads only when keep(consistency) says so.
func linOps(ix *history.Index, keep func(string) bool) map[string][]porcupine.Operation {
	out := map[string][]porcupine.Operation{}
	add := func(k string, p history.Pair, in linInput, o linOutput, ret int64) {
		out[k] = append(out[k], porcupine.Operation{ClientId: p.Invoke.Process, Input: in, Output: o,
			Call: p.Invoke.Time, Return: ret, Metadata: p})
	}
	for _, p := range ix.Pairs {
		c := p.Complete
		idx := p.Invoke.Index
		if c != nil {
			idx = c.Index
		}
		ret := never
		if c != nil && c.Type != history.Info {
			ret = c.Time
		}
		switch p.Invoke.F {
		case history.FBoot:
			k := ix.Keys[p.Invoke.Value.Name]
			if k == nil || k.Boot.Invoke.Index != p.Invoke.Index || p.Type() == history.Fail {
				continue
			}
			kind := outOK
			if p.Type() == history.Info {
				kind = outUnknown
			}
			add(k.Name, p, linInput{F: history.FBoot, Index: idx}, linOutput{Kind: kind}, ret)
		case history.FDelete:
			k := ix.Key(p.Invoke.Value.ID, p.Invoke.Value.Name)
			if k == nil {
				continue
			}
			switch {
			case p.Type() == history.OK:
				add(k.Name, p, linInput{F: history.FDelete, Index: idx}, linOutput{Kind: outOK}, ret)
			case p.Type() == history.Info:
				add(k.Name, p, linInput{F: history.FDelete, Index: idx}, linOutput{Kind: outUnknown}, ret)
			case c.Value.NotFound:
				add(k.Name, p, linInput{F: history.FDelete, Index: idx}, linOutput{Kind: outNotFound}, ret)
			}
		case history.FRead:
			if c == nil || c.Type != history.OK || !keep(p.Invoke.Consistency) {
				continue
			}
			k := ix.Key(p.Invoke.Value.ID, p.Invoke.Value.Name)
			if k == nil {
				continue
			}
			o := linOutput{Kind: outNotFound}
			if s := c.Value.Server; s != nil {
				o = linOutput{Kind: outPresent, Status: s.Status, Deleting: s.Deleting()}
			}
			add(k.Name, p, linInput{F: history.FRead, Index: idx}, o, ret)
		case history.FAction:
			k := ix.Key(p.Invoke.Value.ID, p.Invoke.Value.Name)
			if k == nil || p.Type() == history.Fail {
				continue
			}
			kind := outOK
			if p.Type() == history.Info {
				kind = outUnknown
			}
			add(k.Name, p, linInput{F: history.FAction, Index: idx}, linOutput{Kind: kind}, ret)
		case history.FList:
			if c == nil || c.Type != history.OK || !keep(p.Invoke.Consistency) {
				continue
			}
			seen := map[string]bool{}
			for _, s := range c.Value.Servers {
				k := ix.Key(s.ID, s.Name)
				if k == nil {
					continue
				}
				seen[k.Name] = true
				add(k.Name, p, linInput{F: history.FRead, Index: idx},
					linOutput{Kind: outPresent, Status: s.Status, Deleting: s.Deleting()}, ret)
			}
			// Absence says something only about servers known to exist
			// and not being deleted.
			for _, name := range ix.Order {
				k := ix.Keys[name]
				if seen[name] || !(k.BootOK || k.Observed) || k.Boot.Invoke.Time > c.Time || k.FirstDelete < c.Time {
					continue
				}
				add(name, p, linInput{F: history.FRead, Index: idx}, linOutput{Kind: outNotFound}, ret)
			}
		}
	}
	return out
}

// Linearizable checks every server's history against the model.
// With allReads, reads at default consistency are included too.
func Linearizable(ix *history.Index, allReads bool, timeout time.Duration, vizDir string) LinResult {
	keep := func(c string) bool { return c == history.Linearizable }
	res := LinResult{Valid: true, Reads: history.Linearizable}
	if allReads {
		keep = func(string) bool { return true }
		res.Reads = "all"
	}
	byKey := linOps(ix, keep)
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	res.Keys = len(keys)
	for _, k := range keys {
		ops := byKey[k]
		res.Ops += len(ops)
		verdict, info := porcupine.CheckOperationsVerbose(serverModel, ops, timeout)
		switch verdict {
		case porcupine.Ok:
			continue
		case porcupine.Unknown:
			res.Valid = false
			res.Unknown = append(res.Unknown, k)
			continue
		}
		res.Valid = false
		a := LinAnomaly{Key: k, History: describeOps(ops), Cause: "other"}
		if porcupine.CheckOperationsTimeout(serverModel, withoutDelete404(ops), timeout) == porcupine.Ok {
			a.Cause = "stale-delete-404"
		}
		if res.Causes == nil {
			res.Causes = map[string]int{}
		}
		res.Causes[a.Cause]++
		if ki := ix.Keys[k]; ki != nil {
			for id := range ki.IDs {
				a.IDs = append(a.IDs, id)
			}
			sort.Strings(a.IDs)
		}
		if vizDir != "" && len(res.Illegal) < 20 {
			path := filepath.Join(vizDir, fmt.Sprintf("linearizability-%s-%s.html", res.Reads, k))
			if err := os.MkdirAll(vizDir, 0o755); err == nil {
				if err := porcupine.VisualizePath(serverModel, info, path); err == nil {
					a.Plot = filepath.Base(path)
				}
			}
		}
		res.Illegal = append(res.Illegal, a)
	}
	return res
}

// describeOps renders a server's operations, one line each, in call order.
func describeOps(ops []porcupine.Operation) []string {
	sorted := append([]porcupine.Operation(nil), ops...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	var out []string
	for _, op := range sorted {
		p := op.Metadata.(history.Pair)
		ret := "∞"
		if op.Return != never {
			ret = fmt.Sprintf("%.3fs", time.Duration(op.Return).Seconds())
		}
		in, o := op.Input.(linInput), op.Output.(linOutput)
		what := serverModel.DescribeOperation(in, o)
		cons := ""
		if p.Invoke.Consistency != "" {
			cons = " " + p.Invoke.Consistency
		}
		line := fmt.Sprintf("%.3fs..%s p%d %s%s via %s: %s", time.Duration(op.Call).Seconds(), ret, p.Invoke.Process,
			p.Invoke.F, cons, p.Invoke.Node, strings.TrimSpace(what))
		if p.Complete != nil && p.Complete.Error != "" {
			line += " [" + truncate(p.Complete.Error, 120) + "]"
		}
		out = append(out, line)
		if len(out) == 60 {
			out = append(out, fmt.Sprintf("... %d more", len(sorted)-60))
			break
		}
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// withoutDelete404 drops the deletes answered 404, to tell whether they
// alone make a history illegal.
func withoutDelete404(ops []porcupine.Operation) []porcupine.Operation {
	var out []porcupine.Operation
	for _, op := range ops {
		if op.Input.(linInput).F == history.FDelete && op.Output.(linOutput).Kind == outNotFound {
			continue
		}
		out = append(out, op)
	}
	return out
}
