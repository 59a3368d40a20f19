package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/corral-dev/corral/jepsen/client"
)

// Workloads, selectable with -workload; a run's verdict names its own
// ("" in older runs is mixed).
const (
	WorkloadMixed    = "mixed"    // concurrent boots, deletes, shows and lists
	WorkloadMassBoot = "massboot" // waves of simultaneous boots, then deletes
	// WorkloadActions: boots and deletes, plus stop, start, reboot and
	// rebuild of live servers, each action with a request id of its own,
	// faults aimed at the owners of servers with an action just accepted.
	WorkloadActions = "actions"
)

// The files of a results folder that -recheck reads again (beside them:
// report.md, latency.png, linearizability-*.html, run.log and logs/).
const (
	HistoryFile = "history.jsonl"     // every invocation and completion, one Op a line
	FinalFile   = "final.json"        // the FinalState read after the heal
	WindowsFile = "windows.json"      // the fault windows
	VerdictFile = "verdict.json"      // every checker's result
	WavesFile   = "waves.json"        // -workload massboot: the waves
	EffectsFile = "side_effects.json" // -workload actions: the simulator's side-effect log
)

// ReadFile loads a history.jsonl file.
func ReadFile(path string) ([]Op, error) {
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

// WriteFile writes ops as JSON lines.
func WriteFile(path string, ops []Op) error {
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

// WriteJSON writes v to path, indented.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadJSON reads path into v.
func ReadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// ReadEffects loads side_effects.json.
func ReadEffects(path string) (client.EffectLog, error) {
	var l client.EffectLog
	err := ReadJSON(path, &l)
	return l, err
}
