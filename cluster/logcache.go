package cluster

import (
	"fmt"
	"sync"

	"github.com/hashicorp/raft"
)

// logCache keeps the most recent raft entries in memory, as
// raft.LogCache does, within a number of entries and a number of bytes:
// the entries of a first mirror of 10^5 nodes (500 nodes each, 150 KB)
// would otherwise keep some 20 MB of the leader's and every follower's
// heap for as long as fewer than 512 entries follow them. The newest
// entry is always kept.
type logCache struct {
	store raft.LogStore

	mu     sync.RWMutex
	ring   []*raft.Log // by index modulo its length
	bytes  int         // of the cached entries' data
	budget int
	oldest uint64 // no entry below it is cached
}

// newLogCache caches up to capacity entries of at most budget bytes of
// data in all, in front of store.
func newLogCache(capacity, budget int, store raft.LogStore) (*logCache, error) {
	if capacity <= 0 || budget <= 0 {
		return nil, fmt.Errorf("raft log cache: capacity %d and budget %d must be positive", capacity, budget)
	}
	return &logCache{store: store, ring: make([]*raft.Log, capacity), budget: budget}, nil
}

// IsMonotonic implements raft.MonotonicLogStore for the store it wraps.
func (c *logCache) IsMonotonic() bool {
	if m, ok := c.store.(raft.MonotonicLogStore); ok {
		return m.IsMonotonic()
	}
	return false
}

func (c *logCache) GetLog(idx uint64, log *raft.Log) error {
	c.mu.RLock()
	cached := c.ring[idx%uint64(len(c.ring))]
	c.mu.RUnlock()
	if cached != nil && cached.Index == idx {
		*log = *cached
		return nil
	}
	return c.store.GetLog(idx, log)
}

func (c *logCache) StoreLog(log *raft.Log) error { return c.StoreLogs([]*raft.Log{log}) }

func (c *logCache) StoreLogs(logs []*raft.Log) error {
	if err := c.store.StoreLogs(logs); err != nil {
		return fmt.Errorf("unable to store logs within log store, err: %q", err)
	}
	if len(logs) == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := uint64(len(c.ring))
	for _, l := range logs {
		slot := l.Index % n
		if old := c.ring[slot]; old != nil {
			c.bytes -= len(old.Data)
		}
		c.ring[slot] = l
		c.bytes += len(l.Data)
	}
	newest := logs[len(logs)-1].Index
	if newest+1 > n {
		c.oldest = max(c.oldest, newest+1-n) // older ones were overwritten
	}
	for ; c.bytes > c.budget && c.oldest < newest; c.oldest++ {
		slot := c.oldest % n
		if old := c.ring[slot]; old != nil && old.Index == c.oldest {
			c.bytes -= len(old.Data)
			c.ring[slot] = nil
		}
	}
	return nil
}

func (c *logCache) FirstIndex() (uint64, error) { return c.store.FirstIndex() }

func (c *logCache) LastIndex() (uint64, error) { return c.store.LastIndex() }

func (c *logCache) DeleteRange(min, max uint64) error {
	c.mu.Lock()
	clear(c.ring)
	c.bytes, c.oldest = 0, 0
	c.mu.Unlock()
	return c.store.DeleteRange(min, max)
}
