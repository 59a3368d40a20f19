package history

import (
	"math"
)

// KeyInfo is what the history says about one server, keyed by the unique
// name its boot used.
type KeyInfo struct {
	Name        string
	IDs         map[string]bool
	Boot        *Pair
	BootOK      bool
	BootFailed  bool  // definitely not applied
	Observed    bool  // some read or list saw it
	FirstDelete int64 // invocation time of the first delete (MaxInt64: none)
	DeleteOK    bool
	DeleteMaybe bool    // some delete succeeded or has an unknown outcome
	Delete503   []int64 // completion times of deletes answered 503 (definite: not applied)
}

// Index indexes a history by server.
type Index struct {
	Pairs     []Pair
	NameOf    map[string]string // server id → name
	Keys      map[string]*KeyInfo
	Order     []string // keys in boot order
	End       int64    // time of the last event
	SawActive bool     // some read or list saw a server ACTIVE
}

// NewIndex indexes ops.
func NewIndex(ops []Op) *Index {
	ix := &Index{Pairs: Pairs(ops), NameOf: map[string]string{}, Keys: map[string]*KeyInfo{}}
	for _, op := range ops {
		if op.Time > ix.End {
			ix.End = op.Time
		}
	}
	learn := func(id, name string) {
		if id != "" && name != "" {
			if _, ok := ix.NameOf[id]; !ok {
				ix.NameOf[id] = name
			}
			if k := ix.Keys[name]; k != nil {
				k.IDs[id] = true
			}
		}
	}
	for i := range ix.Pairs {
		p := &ix.Pairs[i]
		if p.Invoke.F != FBoot {
			continue
		}
		name := p.Invoke.Value.Name
		if _, dup := ix.Keys[name]; dup || name == "" {
			continue
		}
		k := &KeyInfo{Name: name, IDs: map[string]bool{}, Boot: p, FirstDelete: math.MaxInt64}
		switch p.Type() {
		case OK:
			k.BootOK = true
		case Fail:
			k.BootFailed = true
		}
		ix.Keys[name] = k
		ix.Order = append(ix.Order, name)
	}
	for _, p := range ix.Pairs {
		if c := p.Complete; c != nil {
			learn(c.Value.ID, c.Value.Name)
			if c.Type == OK && c.Value.Server != nil {
				learn(c.Value.Server.ID, c.Value.Server.Name)
			}
			for _, s := range c.Value.Servers {
				learn(s.ID, s.Name)
			}
		}
		learn(p.Invoke.Value.ID, p.Invoke.Value.Name)
	}
	for _, p := range ix.Pairs {
		c := p.Complete
		switch p.Invoke.F {
		case FDelete:
			k := ix.Key(p.Invoke.Value.ID, p.Invoke.Value.Name)
			if k == nil {
				continue
			}
			if p.Invoke.Time < k.FirstDelete {
				k.FirstDelete = p.Invoke.Time
			}
			switch p.Type() {
			case OK:
				k.DeleteOK, k.DeleteMaybe = true, true
			case Info:
				k.DeleteMaybe = true
			case Fail:
				if c.Code == 503 {
					k.Delete503 = append(k.Delete503, c.Time)
				}
			}
		case FRead:
			if c != nil && c.Type == OK && c.Value.Server != nil {
				if k := ix.Key(c.Value.Server.ID, c.Value.Server.Name); k != nil {
					k.Observed = true
				}
				ix.SawActive = ix.SawActive || c.Value.Server.Status == "ACTIVE"
			}
		case FList:
			if c != nil && c.Type == OK {
				for _, s := range c.Value.Servers {
					if k := ix.Key(s.ID, s.Name); k != nil {
						k.Observed = true
					}
					ix.SawActive = ix.SawActive || s.Status == "ACTIVE"
				}
			}
		}
	}
	return ix
}

// Key finds the server by id, or by name.
func (ix *Index) Key(id, name string) *KeyInfo {
	if n, ok := ix.NameOf[id]; ok {
		name = n
	}
	return ix.Keys[name]
}
