package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"
)

// Op types, as in Jepsen: an invocation and then exactly one completion.
const (
	Invoke = "invoke"
	OK     = "ok"   // the operation took effect (or the read returned this value)
	Fail   = "fail" // the operation certainly did not take effect
	Info   = "info" // unknown outcome: it may or may not have taken effect
)

// Operation functions.
const (
	FBoot   = "boot"
	FDelete = "delete"
	FRead   = "read"   // GET /servers/{id}
	FList   = "list"   // GET /servers/detail
	FAction = "action" // POST /servers/{id}/action (-workload actions)
)

// Consistency levels passed in ?consistency=.
const (
	Linearizable = "linearizable"
	Default      = "default"
)

// ServerState is what a read saw of one server.
type ServerState struct {
	ID     string `json:"id"`
	Name   string `json:"name,omitempty"`
	Status string `json:"status,omitempty"`
	Task   string `json:"task,omitempty"`
	Host   string `json:"host,omitempty"`
	Node   string `json:"node,omitempty"`
	Fault  string `json:"fault,omitempty"` // an ERROR server's fault message
}

// Deleting reports whether a delete was requested and not yet finished.
func (s ServerState) Deleting() bool { return s.Task == "deleting" }

// Acting reports whether a server action (stop, start, reboot, rebuild)
// was accepted and not yet finished.
func (s ServerState) Acting() bool {
	switch s.Task {
	case "powering-off", "powering-on", "rebooting", "rebooting_hard", "rebuilding":
		return true
	}
	switch s.Status {
	case "REBOOT", "HARD_REBOOT", "REBUILD":
		return true
	}
	return false
}

// OpValue is the value of an operation: the server it is about and, for
// completed reads, what was seen.
type OpValue struct {
	Name     string        `json:"name,omitempty"`
	ID       string        `json:"id,omitempty"`
	NotFound bool          `json:"not_found,omitempty"` // a read or delete answered 404
	Server   *ServerState  `json:"server,omitempty"`    // a read's result
	Servers  []ServerState `json:"servers,omitempty"`   // a list's result
	Action   *ActionInfo   `json:"action,omitempty"`    // a server action: which, and its request id
}

// Op is one line of history.jsonl.
type Op struct {
	Index       int     `json:"index"`
	Process     int     `json:"process"`
	Type        string  `json:"type"`
	F           string  `json:"f"`
	Node        string  `json:"node,omitempty"` // the peer the request was sent to
	Consistency string  `json:"consistency,omitempty"`
	Time        int64   `json:"time"` // nanoseconds since the start of the run
	Value       OpValue `json:"value"`
	Code        int     `json:"code,omitempty"` // HTTP status of the completion
	Error       string  `json:"error,omitempty"`
	Injected    bool    `json:"injected,omitempty"` // added by -inject-*, not observed
}

// Recorder collects the history, in memory and on disk as it happens.
type Recorder struct {
	mu    sync.Mutex
	start time.Time
	ops   []Op
	f     *os.File
	w     *bufio.Writer
}

// NewRecorder writes history lines to path (if not empty).
func NewRecorder(path string) (*Recorder, error) {
	r := &Recorder{start: time.Now()}
	if path != "" {
		f, err := os.Create(path)
		if err != nil {
			return nil, err
		}
		r.f, r.w = f, bufio.NewWriter(f)
	}
	return r, nil
}

// Start is the moment the history's times count from.
func (r *Recorder) Start() time.Time { return r.start }

// Since is the time since the start of the run.
func (r *Recorder) Since() time.Duration { return time.Since(r.start) }

// Add stamps op with the time and an index and records it.
func (r *Recorder) Add(op Op) Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	op.Time = int64(time.Since(r.start))
	op.Index = len(r.ops)
	r.ops = append(r.ops, op)
	if r.w != nil {
		b, _ := json.Marshal(op)
		r.w.Write(append(b, '\n'))
	}
	return op
}

// Ops returns a copy of the history.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}

// Close flushes the file.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w == nil {
		return nil
	}
	err := r.w.Flush()
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	r.w = nil
	return err
}

// ReadHistory loads a history.jsonl file.
func ReadHistory(path string) ([]Op, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ops []Op
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		var op Op
		if err := json.Unmarshal(sc.Bytes(), &op); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		ops = append(ops, op)
	}
	return ops, sc.Err()
}

// WriteHistory writes ops as JSON lines.
func WriteHistory(path string, ops []Op) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, op := range ops {
		if err := enc.Encode(op); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Pair is an invocation with its completion (Complete is nil when the
// history ended first; such an operation counts as info).
type Pair struct {
	Invoke   Op
	Complete *Op
}

// Type is the completion type (info when the history ended first).
func (p Pair) Type() string {
	if p.Complete == nil {
		return Info
	}
	return p.Complete.Type
}

// Latency is the time from invocation to completion (0 when incomplete).
func (p Pair) Latency() time.Duration {
	if p.Complete == nil {
		return 0
	}
	return time.Duration(p.Complete.Time - p.Invoke.Time)
}

// Pairs matches each invocation with the next completion of its process,
// in invocation order.
func Pairs(ops []Op) []Pair {
	open := map[int]int{}
	var out []Pair
	for _, op := range ops {
		switch op.Type {
		case Invoke:
			open[op.Process] = len(out)
			out = append(out, Pair{Invoke: op})
		case OK, Fail, Info:
			i, ok := open[op.Process]
			if !ok {
				continue
			}
			c := op
			out[i].Complete = &c
			delete(open, op.Process)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Invoke.Time < out[j].Invoke.Time })
	return out
}
