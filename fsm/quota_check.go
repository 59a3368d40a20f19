package fsm

import (
	"fmt"
	"strconv"
	"strings"
)

// What the quotas count, and the checks that refuse a create over them.
// Every check is a pure read of the state, made by Apply before it
// changes anything: a refusal leaves the state untouched, and every peer
// refuses the same entries.

// serverUsage is what live servers use: their number, and the vcpus and
// ram (MiB) of their flavors, as Nova counts them by default
// ([quota] count_usage_from_placement = false): from the flavor, bare
// metal included, whatever resources:VCPU=0 says to Placement. Servers in
// ERROR count, as in Nova; deleted ones do not.
type serverUsage struct{ instances, cores, ram int64 }

// quotaUsage is the usage index: the servers of every project, and of
// every user in a project (kept by putServer and removeServer, rebuilt on
// restore; see load.go), and the key pairs of every user (kept by the key
// pair commands).
type quotaUsage struct {
	projects map[string]serverUsage      // by project
	users    map[projectUser]serverUsage // by project and user
	keyPairs map[string]int64            // by user
}

// projectUser is a user of a project: a key that costs no allocation.
type projectUser struct{ project, user string }

func newQuotaUsage() quotaUsage {
	return quotaUsage{projects: map[string]serverUsage{}, users: map[projectUser]serverUsage{}, keyPairs: map[string]int64{}}
}

// countServer adds a live server to the usage of its project and user
// (sign 1) or takes it out (sign -1).
func (u *quotaUsage) countServer(s *Server, sign int64) {
	if !s.Live() {
		return
	}
	d := serverUsage{sign, sign * int64(s.Flavor.VCPUs), sign * int64(s.Flavor.RAM)}
	bump(u.projects, s.Project(), d)
	bump(u.users, projectUser{s.Project(), s.User()}, d)
}

func bump[K comparable](m map[K]serverUsage, key K, d serverUsage) {
	v := m[key]
	v.instances, v.cores, v.ram = v.instances+d.instances, v.cores+d.cores, v.ram+d.ram
	if v == (serverUsage{}) {
		delete(m, key)
		return
	}
	m[key] = v
}

// countKeyPair adds a user's key pair (sign 1) or takes it out (-1).
func (u *quotaUsage) countKeyPair(user string, sign int64) {
	if u.keyPairs[user] += sign; u.keyPairs[user] <= 0 {
		delete(u.keyPairs, user)
	}
}

// quotaCounter adds to inUse what a project, or a user in it when user
// is not empty, uses of a resource another entity keeps (server groups);
// entities register theirs with registerQuotaCounter in an init function.
type quotaCounter func(st *state, project, user string, inUse QuotaLimits)

var quotaCounters []quotaCounter

func registerQuotaCounter(c quotaCounter) { quotaCounters = append(quotaCounters, c) }

// quotaUsage is what a project, or a user in it when user is not empty,
// uses of the resources Nova counts in its quota details. Key pairs and
// server group members are counted per user or per group and show 0
// there, as in Nova.
func (st *state) quotaUsage(project, user string) QuotaLimits {
	su := st.usage.projects[project]
	if user != "" {
		su = st.usage.users[projectUser{project, user}]
	}
	out := QuotaLimits{QuotaInstances: su.instances, QuotaCores: su.cores, QuotaRAM: su.ram}
	for _, c := range quotaCounters {
		c(st, project, user, out)
	}
	return out
}

// recountQuotaUsage counts the usage of every project and user by walking
// the servers and key pairs: the reference the maintained index must equal.
func recountQuotaUsage(st *state) quotaUsage {
	u := newQuotaUsage()
	for _, s := range st.servers {
		u.countServer(&s, 1)
	}
	for _, k := range st.keypairs {
		u.countKeyPair(k.UserID, 1)
	}
	return u
}

// ErrQuotaExceeded-wrapping errors and other refusals whose message is
// Nova's word for word (the API shows it as is).
type novaErr struct {
	kind error
	msg  string
}

func (e *novaErr) Error() string { return e.msg }
func (e *novaErr) Unwrap() error { return e.kind }

func novaError(kind error, msg string) error { return &novaErr{kind: kind, msg: msg} }

// quotaExceeded is a refusal over a quota, with Nova's message (403).
func quotaExceeded(msg string) error { return novaError(ErrQuotaExceeded, msg) }

// quotaAllows reports whether a project and the user in it may hold used
// plus requested of resource r: within the project's limit and the
// user's. The checks of entities other files own (server groups and their
// members) call it with the counts they keep.
func (st *state) quotaAllows(project, user, r string, used, requested int64) bool {
	for _, limit := range []int64{st.quotas.projectLimit(project, r), st.quotas.userLimit(project, user, r)} {
		if limit >= 0 && used+requested > limit {
			return false
		}
	}
	return true
}

// checkCreateQuota is the quota check of a new server (applyCreateServer):
// its metadata items, then one more instance of its flavor.
func (st *state) checkCreateQuota(c *CreateServer, f Flavor) error {
	project, user := orAdmin(c.ProjectID), orAdmin(c.UserID)
	if err := st.checkMetadataQuota(project, user, len(c.Metadata)); err != nil {
		return err
	}
	_, err := st.checkServerQuota(project, user, 1, 1, f)
	return err
}

// checkMetadataQuota refuses more than metadata_items metadata items on
// one server of the project and user, with Nova's message (403). The
// server metadata commands call it with the number of items a server
// would have.
func (st *state) checkMetadataQuota(project, user string, items int) error {
	if items == 0 || st.quotaAllows(project, user, QuotaMetadataItems, 0, int64(items)) {
		return nil
	}
	limit := st.quotas.projectLimit(project, QuotaMetadataItems)
	if u := st.quotas.userLimit(project, user, QuotaMetadataItems); u >= 0 && (limit < 0 || u < limit) {
		limit = u
	}
	return quotaExceeded(fmt.Sprintf("Maximum number of metadata items exceeds %d", limit))
}

// checkKeyPairQuota refuses a user one more key pair than key_pairs
// allows, the limit being the user's in the project of the caller who
// creates it, with Nova's message (403).
func (st *state) checkKeyPairQuota(project, user string) error {
	if st.quotaAllows(project, user, QuotaKeyPairs, st.usage.keyPairs[user], 1) {
		return nil
	}
	return quotaExceeded("Quota exceeded, too many key pairs.")
}

// serverResources are the resources a server counts against, sorted as
// Nova lists those exceeded.
var serverResources = [3]string{QuotaCores, QuotaInstances, QuotaRAM}

// checkServerQuota is Nova's check_num_instances_quota: the number of
// servers of flavor f, from minCount to maxCount, that the project and
// its user may create. It answers maxCount when all fit; the most that
// fit when that is minCount or more (multiple create is all or nothing
// by minCount); else Nova's 403 ("Quota exceeded for instances: Requested
// 1, but already used 10 of 10 instances"). The user's limits count only
// when the user has one of instances, cores and ram set, as in Nova.
// CreateServer checks one server (1, 1); a multiple create checks its
// counts once, then creates what this answers.
func (st *state) checkServerQuota(project, user string, minCount, maxCount int, f Flavor) (int, error) {
	per := map[string]int64{QuotaInstances: 1, QuotaCores: int64(f.VCPUs), QuotaRAM: int64(f.RAM)}
	type scope struct {
		limit func(r string) int64
		used  serverUsage
	}
	scopes := []scope{{func(r string) int64 { return st.quotas.projectLimit(project, r) }, st.usage.projects[project]}}
	if own := st.quotas.users[quotaUserKey(project, user)]; hasAny(own, QuotaInstances, QuotaCores, QuotaRAM) {
		scopes = append(scopes, scope{func(r string) int64 { return st.quotas.userLimit(project, user, r) },
			st.usage.users[projectUser{project, user}]})
	}
	usedOf := func(u serverUsage, r string) int64 {
		switch r {
		case QuotaInstances:
			return u.instances
		case QuotaCores:
			return u.cores
		}
		return u.ram
	}
	// overs are the resources over a limit, each with the limit and use
	// of the first scope it exceeds (the project's, then the user's);
	// allowed is how many servers fit every limit.
	n := int64(maxCount)
	var overs []string
	limits, useds := map[string]int64{}, map[string]int64{}
	allowed := n
	for _, r := range serverResources {
		over := false
		for _, sc := range scopes {
			limit, used := sc.limit(r), usedOf(sc.used, r)
			if limit < 0 {
				continue
			}
			if per[r] > 0 {
				allowed = min(allowed, max(limit-used, 0)/per[r])
			}
			if !over && used+n*per[r] > limit {
				over = true
				overs = append(overs, r)
				limits[r], useds[r] = limit, used
			}
		}
	}
	if len(overs) == 0 {
		return maxCount, nil
	}
	if allowed >= int64(minCount) && allowed < n && allowed > 0 {
		return st.checkServerQuota(project, user, minCount, int(allowed), f)
	}
	requested := map[string]string{QuotaInstances: strconv.Itoa(minCount),
		QuotaCores: strconv.FormatInt(n*per[QuotaCores], 10), QuotaRAM: strconv.FormatInt(n*per[QuotaRAM], 10)}
	if minCount != maxCount {
		requested[QuotaInstances] = fmt.Sprintf("%d-%d", minCount, maxCount)
	}
	var reqs, used, allow []string
	for _, r := range overs {
		reqs = append(reqs, requested[r])
		used = append(used, strconv.FormatInt(useds[r], 10))
		allow = append(allow, strconv.FormatInt(limits[r], 10))
	}
	what := strings.Join(overs, ", ")
	return 0, quotaExceeded(fmt.Sprintf("Quota exceeded for %s: Requested %s, but already used %s of %s %s",
		what, strings.Join(reqs, ", "), strings.Join(used, ", "), strings.Join(allow, ", "), what))
}

func hasAny(l QuotaLimits, resources ...string) bool {
	for _, r := range resources {
		if _, ok := l[r]; ok {
			return true
		}
	}
	return false
}
