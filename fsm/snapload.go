package fsm

import (
	"bufio"
	"fmt"
	"io"
	"sync"
)

// recordLoads loads the binary records of a restore (format version 2
// on), one goroutine per record type: the servers, the nodes and the
// placement store fill disjoint parts of the state (binarySpec.load may
// touch only its own), so they load side by side while the stream is
// read. Records reach a goroutine in stream order, in batches.
type recordLoads struct {
	st      *state
	workers map[RecordType]*loadWorker
	wg      sync.WaitGroup
}

// loadWorker loads the records of one type.
type loadWorker struct {
	spec  binarySpec
	name  string
	sh    *sharer           // shares the equal values of this type's records
	ch    chan *recordBatch // full batches, in stream order
	free  chan *recordBatch // batches to reuse
	cur   *recordBatch      // the batch being filled
	errAt int               // number of the first record that failed, when err is set
	err   error
}

// recordBatch is consecutive records of one type: their bodies end to end.
type recordBatch struct {
	first []int // each record's number in the stream
	ends  []int // each body's end in buf
	buf   []byte
}

const (
	batchBytes = 256 << 10 // a batch is sent when its bodies reach this size
	batchQueue = 4         // full batches waiting per type (then the reader waits)
)

func newRecordLoads(st *state) *recordLoads {
	return &recordLoads{st: st, workers: map[RecordType]*loadWorker{}}
}

// read reads the body of record n, of binary type t and size bytes, from
// br into the batch of its type.
func (l *recordLoads) read(br *bufio.Reader, t RecordType, n, size int) error {
	w := l.workers[t]
	if w == nil {
		w = &loadWorker{spec: binRecords[t], name: records[t].name, sh: newSharer(),
			ch: make(chan *recordBatch, batchQueue), free: make(chan *recordBatch, batchQueue+2)}
		l.workers[t] = w
		l.wg.Go(func() { w.run(l.st) })
	}
	if w.cur == nil {
		select {
		case w.cur = <-w.free:
			w.cur.first, w.cur.ends, w.cur.buf = w.cur.first[:0], w.cur.ends[:0], w.cur.buf[:0]
		default:
			w.cur = &recordBatch{buf: make([]byte, 0, batchBytes+4096)}
		}
	}
	b := w.cur
	start := len(b.buf)
	b.buf = append(b.buf, make([]byte, size)...)
	if _, err := io.ReadFull(br, b.buf[start:]); err != nil {
		return err
	}
	b.first, b.ends = append(b.first, n), append(b.ends, len(b.buf))
	if len(b.buf) >= batchBytes {
		w.ch <- b
		w.cur = nil
	}
	return nil
}

// run loads batches until the channel closes; after the first error it
// only drains them.
func (w *loadWorker) run(st *state) {
	for b := range w.ch {
		// One string for the batch, whose records the loaded values keep
		// parts of: a copy per record cost a fifth of a restore. A
		// batch's memory is freed once none of its records' values is
		// held (it was a record's before): at most what was restored.
		body := string(b.buf)
		start := 0
		for i, end := range b.ends {
			if w.err == nil {
				if err := w.spec.load(st, w.sh, body[start:end]); err != nil {
					w.errAt = b.first[i]
					w.err = fmt.Errorf("%w: snapshot record %d (%s): %w", ErrInvalid, b.first[i], w.name, err)
				}
			}
			start = end
		}
		select {
		case w.free <- b:
		default:
		}
	}
}

// wait sends the last batches, waits for every record to load, and
// returns the error of the first record that failed, with its number.
func (l *recordLoads) wait() (int, error) {
	for _, w := range l.workers {
		if w.cur != nil && len(w.cur.ends) > 0 {
			w.ch <- w.cur
		}
		w.cur = nil
		close(w.ch)
	}
	l.wg.Wait()
	at, err := 0, error(nil)
	for _, w := range l.workers {
		if w.err != nil && (err == nil || w.errAt < at) {
			at, err = w.errAt, w.err
		}
	}
	return at, err
}
