package history

import (
	"bufio"
	"encoding/json"
	"os"
	"sync"
	"time"
)

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
