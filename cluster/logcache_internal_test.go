package cluster

import (
	"bytes"
	"testing"

	"github.com/hashicorp/raft"
)

// countingStore counts the reads that reach the store behind the cache.
type countingStore struct {
	*raft.InmemStore
	reads int
}

func (s *countingStore) GetLog(idx uint64, log *raft.Log) error {
	s.reads++
	return s.InmemStore.GetLog(idx, log)
}

func entry(idx uint64, size int) *raft.Log {
	return &raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: bytes.Repeat([]byte{byte(idx)}, size)}
}

// The cache keeps the newest entries within its count and its bytes, the
// newest always; an entry it dropped is read from the store, the same.
func TestLogCacheKeepsTheNewestWithinItsBudget(t *testing.T) {
	store := &countingStore{InmemStore: raft.NewInmemStore()}
	c, err := newLogCache(8, 1000, store)
	if err != nil {
		t.Fatal(err)
	}
	get := func(idx uint64) (fromStore bool) {
		t.Helper()
		before := store.reads
		var l raft.Log
		if err := c.GetLog(idx, &l); err != nil {
			t.Fatalf("entry %d: %v", idx, err)
		}
		if l.Index != idx || len(l.Data) == 0 || l.Data[0] != byte(idx) {
			t.Fatalf("entry %d read back as %d (%d bytes)", idx, l.Index, len(l.Data))
		}
		return store.reads > before
	}
	check := func(what string, cached, stored []uint64) {
		t.Helper()
		for _, i := range cached {
			if get(i) {
				t.Errorf("%s: entry %d is not cached", what, i)
			}
		}
		for _, i := range stored {
			if !get(i) {
				t.Errorf("%s: entry %d is still cached", what, i)
			}
		}
		kept := 0
		for _, l := range c.ring {
			if l != nil {
				kept++
			}
		}
		if c.bytes > c.budget && kept > 1 {
			t.Errorf("%s: %d bytes in %d entries cached, over the budget of %d", what, c.bytes, kept, c.budget)
		}
	}

	// Small entries: the count bounds the cache.
	var small []*raft.Log
	for i := uint64(1); i <= 10; i++ {
		small = append(small, entry(i, 10))
	}
	if err := c.StoreLogs(small); err != nil {
		t.Fatal(err)
	}
	check("ten small entries", []uint64{3, 4, 5, 6, 7, 8, 9, 10}, []uint64{1, 2})
	if c.bytes != 80 {
		t.Fatalf("%d bytes counted for 8 entries of 10", c.bytes)
	}

	// Big entries: the bytes bound it.
	for i := uint64(11); i <= 13; i++ {
		if err := c.StoreLog(entry(i, 400)); err != nil {
			t.Fatal(err)
		}
	}
	check("three entries of 400 bytes", []uint64{12, 13}, []uint64{3, 4, 5, 6, 7, 8, 9, 10, 11})
	if c.bytes != 800 {
		t.Fatalf("%d bytes cached, want the two newest entries of 400", c.bytes)
	}

	// One entry over the whole budget is kept alone.
	if err := c.StoreLog(entry(14, 5000)); err != nil {
		t.Fatal(err)
	}
	check("an entry over the budget", []uint64{14}, []uint64{12, 13})
	if err := c.StoreLog(entry(15, 10)); err != nil {
		t.Fatal(err)
	}
	check("a small entry after it", []uint64{15}, []uint64{14})

	// A truncated log empties the cache.
	if err := c.DeleteRange(14, 15); err != nil {
		t.Fatal(err)
	}
	if c.bytes != 0 {
		t.Fatalf("%d bytes cached after the log was truncated", c.bytes)
	}
	if err := c.StoreLog(entry(14, 10)); err != nil {
		t.Fatal(err)
	}
	check("after a truncation", []uint64{14}, []uint64{13})
}
