package fsm

import "maps"

// Per-host server counts (and the quota usage of projects and users,
// quota_check.go, kept the same way). The leader reads the load of every host at every
// placement decision (hostLoad), so the state keeps the counts instead of
// walking the servers: every change to st.servers goes through putServer
// or removeServer, which move a server's count from its old (host, live)
// to its new one. Restores rebuild the counts from the servers loaded.

// countsFor reports the host a server counts for, if any: live servers
// with an owner.
func countsFor(s Server) (string, bool) {
	return s.Host, s.Live() && s.Host != ""
}

// putServer stores s, replacing the server of the same ID, and keeps the
// host counts.
func (st *state) putServer(s Server) {
	old, had := st.servers[s.ID]
	if had {
		st.uncount(old)
	}
	st.servers[s.ID] = s
	st.count(s)
	st.reindexServer(&old, had, &s)
	if !s.Live() && (!had || old.Live()) {
		st.leaveGroup(s.ID)
	}
	if st.applying != nil {
		st.noteServer(old, had, s)
	}
}

// removeServer deletes the server id, if any, and keeps the host counts.
func (st *state) removeServer(id string) {
	if old, ok := st.servers[id]; ok {
		st.uncount(old)
		st.unindexServer(&old)
		delete(st.servers, id)
	}
	st.leaveGroup(id)
	delete(st.actions, id)
	delete(st.nets, id)
}

func (st *state) count(s Server) {
	if h, ok := countsFor(s); ok {
		st.hostServers[h]++
	}
	if actionNeedsFormat3(&s) {
		st.format3++
	}
	st.usage.countServer(&s, 1)
	if needsFormat4(&s) {
		st.format4++
	}
	if needsFormat5(&s) {
		st.format5++
	}
}

func (st *state) uncount(s Server) {
	if h, ok := countsFor(s); ok {
		if st.hostServers[h]--; st.hostServers[h] <= 0 {
			delete(st.hostServers, h)
		}
	}
	if actionNeedsFormat3(&s) {
		st.format3--
	}
	st.usage.countServer(&s, -1)
	if needsFormat4(&s) {
		st.format4--
	}
	if needsFormat5(&s) {
		st.format5--
	}
}

// hostLoad returns the number of live servers of every host (hosts
// without any are absent). It is a copy, O(hosts): callers may keep it.
func hostLoad(st *state) map[string]int {
	return maps.Clone(st.hostServers)
}

// recountHosts counts the live servers of every host by walking them all:
// the reference the maintained counts must equal.
func recountHosts(servers map[string]Server) map[string]int {
	n := map[string]int{}
	for _, s := range servers {
		if h, ok := countsFor(s); ok {
			n[h]++
		}
	}
	return n
}

// HostLoad returns the number of live servers of every host.
func (s *Store) HostLoad() map[string]int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return hostLoad(s.st)
}
