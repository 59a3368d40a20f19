package placement

import "sort"

// blockMax is the largest block of a posting list. Inserting or removing
// moves at most this many pointers; splitting keeps blocks half full.
const blockMax = 256

// plist is a posting list: a set of providers kept in ascending UUID order
// as a list of sorted blocks, so insertion and removal cost O(log n +
// blockMax) and iteration is in order without sorting.
type plist struct {
	blocks [][]*provider
	n      int
}

func (l *plist) len() int { return l.n }

// block returns the index of the block where uuid belongs.
func (l *plist) block(uuid string) int {
	i := sort.Search(len(l.blocks), func(i int) bool {
		b := l.blocks[i]
		return b[len(b)-1].uuid >= uuid
	})
	if i == len(l.blocks) {
		i--
	}
	return i
}

func searchBlock(b []*provider, uuid string) int {
	return sort.Search(len(b), func(i int) bool { return b[i].uuid >= uuid })
}

// insert adds p; adding a provider already present does nothing.
func (l *plist) insert(p *provider) {
	if len(l.blocks) == 0 {
		l.blocks = append(l.blocks, []*provider{p})
		l.n = 1
		return
	}
	bi := l.block(p.uuid)
	b := l.blocks[bi]
	i := searchBlock(b, p.uuid)
	if i < len(b) && b[i].uuid == p.uuid {
		return
	}
	b = append(b, nil)
	copy(b[i+1:], b[i:])
	b[i] = p
	l.n++
	if len(b) <= blockMax {
		l.blocks[bi] = b
		return
	}
	half := len(b) / 2
	right := append(make([]*provider, 0, blockMax), b[half:]...)
	clear(b[half:])
	l.blocks[bi] = b[:half]
	l.blocks = append(l.blocks, nil)
	copy(l.blocks[bi+2:], l.blocks[bi+1:])
	l.blocks[bi+1] = right
}

// remove deletes p if present.
func (l *plist) remove(p *provider) {
	if len(l.blocks) == 0 {
		return
	}
	bi := l.block(p.uuid)
	b := l.blocks[bi]
	i := searchBlock(b, p.uuid)
	if i == len(b) || b[i].uuid != p.uuid {
		return
	}
	copy(b[i:], b[i+1:])
	b[len(b)-1] = nil
	b = b[:len(b)-1]
	l.n--
	if len(b) > 0 {
		l.blocks[bi] = b
		return
	}
	copy(l.blocks[bi:], l.blocks[bi+1:])
	l.blocks[len(l.blocks)-1] = nil
	l.blocks = l.blocks[:len(l.blocks)-1]
}

// push appends p, which must sort after every provider in the list (bulk
// loading in UUID order).
func (l *plist) push(p *provider) {
	last := len(l.blocks) - 1
	if last < 0 || len(l.blocks[last]) >= blockMax {
		l.blocks = append(l.blocks, make([]*provider, 0, blockMax))
		last++
	}
	l.blocks[last] = append(l.blocks[last], p)
	l.n++
}

// each calls fn for every provider in UUID order until fn returns false.
func (l *plist) each(fn func(*provider) bool) {
	for _, b := range l.blocks {
		for _, p := range b {
			if !fn(p) {
				return
			}
		}
	}
}

// postings maps a key (resource class, trait, aggregate) to its list.
type postings map[string]*plist

func (m postings) add(key string, p *provider) {
	l := m[key]
	if l == nil {
		l = &plist{}
		m[key] = l
	}
	l.insert(p)
}

func (m postings) push(key string, p *provider) {
	l := m[key]
	if l == nil {
		l = &plist{}
		m[key] = l
	}
	l.push(p)
}

func (m postings) del(key string, p *provider) {
	if l := m[key]; l != nil {
		l.remove(p)
		if l.n == 0 {
			delete(m, key)
		}
	}
}

func (m postings) size(key string) int {
	if l := m[key]; l != nil {
		return l.n
	}
	return 0
}
