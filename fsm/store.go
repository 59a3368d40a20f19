package fsm

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// Result is the outcome of applying one log entry.
type Result struct {
	Value any   // a copy of the entity after the command (Host, Flavor, ...), or nil
	Err   error // business error wrapping ErrNotFound, ErrConflict or ErrInvalid; state is unchanged when set
}

// Store holds the replicated state. It is safe for concurrent use: Apply and
// Restore take the write lock, reads take the read lock.
type Store struct {
	mu      sync.RWMutex
	st      *state
	applied atomic.Uint64 // written only under mu

	// WaitApplied's: waitCh is closed when the applied index changes (nil
	// when nobody waits).
	waitMu sync.Mutex
	waitCh chan struct{}
}

// New returns an empty store at applied index 0.
func New() *Store {
	return &Store{st: newState()}
}

// Apply applies the log entry data at index and returns its result.
//
// An unknown command type carrying IgnoreUnknownFlag is skipped. An unknown
// type without the flag, or a known type whose body cannot be decoded, panics:
// applying part of the log would let replicas diverge. Business errors are
// returned in Result.Err and change nothing. The applied index becomes index
// in every case that does not panic.
func (s *Store) Apply(index uint64, data []byte) Result {
	cmd, err := Decode(data)
	if err != nil {
		switch {
		case isUnknown(err) && IsIgnorable(data):
			s.setApplied(index)
			return Result{}
		case isUnknown(err):
			_, t, _ := EntryEncoding(data)
			panic(fmt.Sprintf("fsm: unknown command type %d at index %d: this peer is older than the leader; upgrade it "+
				"(a newer corral wrote it: a downgrade past a new command type is not supported; `corral version` lists the types a binary knows)", t, index))
		case errors.Is(err, ErrUnknownEncoding):
			panic(fmt.Sprintf("fsm: log entry at index %d is in entry encoding %d: this peer is older than the leader; upgrade it "+
				"(a newer corral wrote it: a downgrade past a new entry encoding is not supported; `corral version` lists the encodings a binary reads)", index, data[1]))
		default:
			panic(fmt.Sprintf("fsm: corrupt log entry at index %d: %v: restore this peer from a snapshot of a healthy peer", index, err))
		}
	}
	spec := registry[cmd.Type()]

	s.mu.Lock()
	v, err := func() (any, error) {
		defer s.mu.Unlock()
		s.applied.Store(index)
		s.st.index, s.st.applying = index, cmd
		defer func() { s.st.applying = nil }()
		return spec.apply(s.st, cmd)
	}()
	s.notify()
	if err != nil {
		return Result{Err: err}
	}
	return Result{Value: v}
}

func (s *Store) setApplied(index uint64) {
	s.mu.Lock()
	s.applied.Store(index)
	s.mu.Unlock()
	s.notify()
}

// notify wakes every WaitApplied caller.
func (s *Store) notify() {
	s.waitMu.Lock()
	if s.waitCh != nil {
		close(s.waitCh)
		s.waitCh = nil
	}
	s.waitMu.Unlock()
}

// AppliedIndex returns the index of the last applied (or restored) entry.
func (s *Store) AppliedIndex() uint64 { return s.applied.Load() }

// WaitApplied blocks until AppliedIndex() >= index or ctx is done, in which
// case it returns an error wrapping ctx.Err().
func (s *Store) WaitApplied(ctx context.Context, index uint64) error {
	for {
		s.waitMu.Lock()
		if s.applied.Load() >= index {
			s.waitMu.Unlock()
			return nil
		}
		if s.waitCh == nil {
			s.waitCh = make(chan struct{})
		}
		ch := s.waitCh
		s.waitMu.Unlock()

		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for index %d (applied %d): %w", index, s.applied.Load(), ctx.Err())
		}
	}
}

// Snapshot returns a deep copy of the current state and applied index.
func (s *Store) Snapshot() *Snapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return &Snapshot{index: s.applied.Load(), st: s.st.clone()}
}

// Restore replaces all state, including the applied index, with the snapshot
// read from r. On error the store is unchanged.
func (s *Store) Restore(r io.Reader) error { return s.RestoreAt(r, 0) }

// RestoreAt is Restore with the applied index set to index, the log index
// the snapshot stands for, when index is not 0. A snapshot records the
// index of the last entry the store applied, which can be lower: the log
// also holds entries that never reach the store, and a restored backup
// replaces the state at an index of the log it is restored into.
func (s *Store) RestoreAt(r io.Reader, index uint64) error {
	st, own, err := readSnapshot(r)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if index == 0 {
		index = own
	}
	s.mu.Lock()
	s.st = st
	s.applied.Store(index)
	s.mu.Unlock()
	s.notify()
	return nil
}

// Digest returns the hex SHA-256 of the canonical encoding of the state's
// snapshot records. It covers the state only, not the applied index, so a
// rejected command leaves it unchanged and two peers with equal state have
// equal digests.
func (s *Store) Digest() string {
	h := sha256.New()
	bw := bufio.NewWriter(h)
	s.mu.RLock()
	err := writeRecords(bw, s.st)
	s.mu.RUnlock()
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		// Hashing cannot fail and every record is JSON-encodable; report the
		// impossible rather than a misleading digest.
		return "error: " + err.Error()
	}
	return hex.EncodeToString(h.Sum(nil))
}
