package fsm

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Nova's quotas (nova/quota.py, its DbQuotaDriver): a limit per resource
// at four layers, each falling back to the next:
//
//   - a user's within a project (os-quota-sets/{project}?user_id=),
//   - a project's (os-quota-sets/{project}),
//   - the "default" quota class (os-quota-class-sets/default),
//   - [quota] of corral's configuration, recorded by SetQuotaDefaults
//     once every live peer is configured alike (the leader commits it).
//
// A resource set at no layer is unlimited (-1), so a state that never
// applied a quota command refuses nothing: peers of older versions,
// which know none of these commands, apply the same log alike. Creates
// are checked when their entries apply (quota_check.go) against the
// usage the state keeps (quota_usage.go), so every peer refuses the same
// entries.

// Quota resources, as Nova names them.
const (
	QuotaInstances                = "instances"
	QuotaCores                    = "cores"
	QuotaRAM                      = "ram" // MiB
	QuotaMetadataItems            = "metadata_items"
	QuotaKeyPairs                 = "key_pairs"
	QuotaServerGroups             = "server_groups"
	QuotaServerGroupMembers       = "server_group_members"
	QuotaInjectedFiles            = "injected_files"
	QuotaInjectedFileContentBytes = "injected_file_content_bytes"
	QuotaInjectedFilePathBytes    = "injected_file_path_bytes"
	// Nova-network's, which Nova still shows below microversion 2.36
	// (2.50 for quota classes) and enforces nowhere.
	QuotaFixedIPs           = "fixed_ips"
	QuotaFloatingIPs        = "floating_ips"
	QuotaSecurityGroups     = "security_groups"
	QuotaSecurityGroupRules = "security_group_rules"
)

// QuotaResources are every quota resource, sorted.
var QuotaResources = []string{
	QuotaCores, QuotaFixedIPs, QuotaFloatingIPs, QuotaInjectedFileContentBytes, QuotaInjectedFilePathBytes,
	QuotaInjectedFiles, QuotaInstances, QuotaKeyPairs, QuotaMetadataItems, QuotaRAM,
	QuotaSecurityGroupRules, QuotaSecurityGroups, QuotaServerGroupMembers, QuotaServerGroups,
}

// Quota limits.
const (
	// QuotaUnlimited is Nova's "no limit".
	QuotaUnlimited = -1
	// MaxQuotaLimit is the largest limit Nova takes (its database's MAX_INT).
	MaxQuotaLimit = 0x7FFFFFFF
	// DefaultQuotaClass is the one quota class Nova enforces: its limits
	// are every project's defaults.
	DefaultQuotaClass = "default"
	// maxQuotaIDLen bounds project, user and class names.
	maxQuotaIDLen = 255
)

// NovaQuotaDefaults are the defaults of Nova's [quota] options
// (nova/conf/quota.py); Nova-network's resources have none (-1).
func NovaQuotaDefaults() QuotaLimits {
	return QuotaLimits{
		QuotaInstances: 10, QuotaCores: 20, QuotaRAM: 50 * 1024, QuotaMetadataItems: 128,
		QuotaInjectedFiles: 5, QuotaInjectedFileContentBytes: 10 * 1024, QuotaInjectedFilePathBytes: 255,
		QuotaKeyPairs: 100, QuotaServerGroups: 10, QuotaServerGroupMembers: 10,
		QuotaFixedIPs: QuotaUnlimited, QuotaFloatingIPs: QuotaUnlimited,
		QuotaSecurityGroups: QuotaUnlimited, QuotaSecurityGroupRules: QuotaUnlimited,
	}
}

// QuotaLimits maps quota resources to limits (-1: unlimited). A resource
// absent from one layer falls back to the next.
type QuotaLimits map[string]int64

// String is the limits in canonical form ("cores=20,instances=10"):
// equal limits give equal strings.
func (l QuotaLimits) String() string {
	var b strings.Builder
	for i, r := range sortedKeys(l) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(r)
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(l[r], 10))
	}
	return b.String()
}

// IsQuotaResource reports whether r is a quota resource.
func IsQuotaResource(r string) bool {
	_, ok := slices.BinarySearch(QuotaResources, r)
	return ok
}

// checkQuotaLimits checks that every resource is known and every limit
// between -1 and MaxQuotaLimit.
func checkQuotaLimits(l QuotaLimits) error {
	for _, r := range sortedKeys(l) {
		if !IsQuotaResource(r) {
			return fmt.Errorf("%w: %q is not a quota resource (known: %s)", ErrInvalid, r, strings.Join(QuotaResources, ", "))
		}
		if v := l[r]; v < QuotaUnlimited || v > MaxQuotaLimit {
			return fmt.Errorf("%w: quota limit %d for %s is out of range: -1 (unlimited) to %d", ErrInvalid, v, r, MaxQuotaLimit)
		}
	}
	return nil
}

// checkQuotaID checks a project, user or class name.
func checkQuotaID(what, id string) error {
	if id == "" || len(id) > maxQuotaIDLen || strings.ContainsRune(id, 0) {
		return fmt.Errorf("%w: a quota's %s must be 1 to %d characters, without NUL", ErrInvalid, what, maxQuotaIDLen)
	}
	return nil
}

// quotaState is the limits of every layer.
type quotaState struct {
	defaults QuotaLimits            // [quota] (SetQuotaDefaults)
	classes  map[string]QuotaLimits // by class name
	projects map[string]QuotaLimits // by project id
	users    map[string]QuotaLimits // by quotaUserKey
}

func newQuotaState() quotaState {
	return quotaState{defaults: QuotaLimits{}, classes: map[string]QuotaLimits{},
		projects: map[string]QuotaLimits{}, users: map[string]QuotaLimits{}}
}

func (q quotaState) clone() quotaState {
	c := newQuotaState()
	c.defaults = maps.Clone(q.defaults)
	for _, m := range []struct{ from, to map[string]QuotaLimits }{
		{q.classes, c.classes}, {q.projects, c.projects}, {q.users, c.users}} {
		for k, v := range m.from {
			m.to[k] = maps.Clone(v)
		}
	}
	return c
}

func quotaUserKey(project, user string) string { return project + "\x00" + user }

// configLimit is [quota]'s limit of r.
func (q *quotaState) configLimit(r string) int64 {
	if v, ok := q.defaults[r]; ok {
		return v
	}
	return QuotaUnlimited
}

// classLimit is a quota class's limit of r (Nova's get_class_quotas).
func (q *quotaState) classLimit(class, r string) int64 {
	if v, ok := q.classes[class][r]; ok {
		return v
	}
	return q.configLimit(r)
}

// projectLimit is a project's limit of r: its own, else the default
// class's (Nova's get_project_quotas).
func (q *quotaState) projectLimit(project, r string) int64 {
	if v, ok := q.projects[project][r]; ok {
		return v
	}
	return q.classLimit(DefaultQuotaClass, r)
}

// userLimit is a user's limit of r in a project: its own, else the
// project's (Nova's get_user_quotas).
func (q *quotaState) userLimit(project, user, r string) int64 {
	if v, ok := q.users[quotaUserKey(project, user)][r]; ok {
		return v
	}
	return q.projectLimit(project, r)
}

// userOverrides are the limits set for the users of a project, by user
// key, sorted.
func (q *quotaState) userOverrides(project string) []string {
	var keys []string
	for _, k := range sortedKeys(q.users) {
		if p, _, _ := strings.Cut(k, "\x00"); p == project {
			keys = append(keys, k)
		}
	}
	return keys
}

// every returns f of every resource.
func every(f func(r string) int64) QuotaLimits {
	out := make(QuotaLimits, len(QuotaResources))
	for _, r := range QuotaResources {
		out[r] = f(r)
	}
	return out
}

// Reads of the quotas (for os-quota-sets, os-quota-class-sets, /limits).

// ProjectQuotas returns the limits of a project, or of a user in it when
// user is not empty, for every resource.
func (s *Store) ProjectQuotas(project, user string) QuotaLimits {
	s.mu.RLock()
	defer s.mu.RUnlock()
	q := &s.st.quotas
	if user != "" {
		return every(func(r string) int64 { return q.userLimit(project, user, r) })
	}
	return every(func(r string) int64 { return q.projectLimit(project, r) })
}

// DefaultQuotas returns every project's defaults: the default class's
// limits, else [quota]'s (Nova's get_defaults).
func (s *Store) DefaultQuotas() QuotaLimits { return s.ClassQuotas(DefaultQuotaClass) }

// ClassQuotas returns a quota class's limits, else [quota]'s.
func (s *Store) ClassQuotas(class string) QuotaLimits {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return every(func(r string) int64 { return s.st.quotas.classLimit(class, r) })
}

// QuotaDefaults returns [quota] as SetQuotaDefaults last recorded it
// (empty before: every limit unlimited).
func (s *Store) QuotaDefaults() QuotaLimits {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return maps.Clone(s.st.quotas.defaults)
}

// QuotaUsage returns what a project, or a user in it when user is not
// empty, uses of the resources Nova counts in its quota details
// (instances, cores, ram, server groups); the others are 0.
func (s *Store) QuotaUsage(project, user string) QuotaLimits {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.quotaUsage(project, user)
}

// quotaRecord is one layer's limits in a snapshot.
type quotaRecord struct {
	Scope   string      `json:"scope"` // quotaScopeDefaults, quotaScopeClass, ...
	Class   string      `json:"class,omitempty"`
	Project string      `json:"project,omitempty"`
	User    string      `json:"user,omitempty"`
	Limits  QuotaLimits `json:"limits"`
}

// Scopes of quota records.
const (
	quotaScopeDefaults = "defaults"
	quotaScopeClass    = "class"
	quotaScopeProject  = "project"
	quotaScopeUser     = "user"
)

func init() {
	registerRecord(RecordQuota, recordSpec{name: "quota", write: writeQuotaRecords, load: loadQuotaRecord})
}

// writeQuotaRecords writes the defaults, then the classes, projects and
// users in key order; nothing when no limit is set.
func writeQuotaRecords(st *state, emit func(v any) error) error {
	q := &st.quotas
	if len(q.defaults) > 0 {
		if err := emit(quotaRecord{Scope: quotaScopeDefaults, Limits: q.defaults}); err != nil {
			return err
		}
	}
	for _, c := range sortedKeys(q.classes) {
		if err := emit(quotaRecord{Scope: quotaScopeClass, Class: c, Limits: q.classes[c]}); err != nil {
			return err
		}
	}
	for _, p := range sortedKeys(q.projects) {
		if err := emit(quotaRecord{Scope: quotaScopeProject, Project: p, Limits: q.projects[p]}); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(q.users) {
		p, u, _ := strings.Cut(k, "\x00")
		if err := emit(quotaRecord{Scope: quotaScopeUser, Project: p, User: u, Limits: q.users[k]}); err != nil {
			return err
		}
	}
	return nil
}

func loadQuotaRecord(st *state, body []byte) error {
	var r quotaRecord
	if err := json.Unmarshal(body, &r); err != nil {
		return err
	}
	if err := checkQuotaLimits(r.Limits); err != nil {
		return err
	}
	if len(r.Limits) == 0 {
		return fmt.Errorf("quota record of scope %q sets no limit", r.Scope)
	}
	q := &st.quotas
	var into map[string]QuotaLimits
	var key, name string
	switch r.Scope {
	case quotaScopeDefaults:
		if len(q.defaults) > 0 {
			return fmt.Errorf("quota defaults appear twice")
		}
		q.defaults = r.Limits
		return nil
	case quotaScopeClass:
		into, key, name = q.classes, r.Class, r.Class
	case quotaScopeProject:
		into, key, name = q.projects, r.Project, r.Project
	case quotaScopeUser:
		if err := checkQuotaID("project", r.Project); err != nil {
			return err
		}
		into, key, name = q.users, quotaUserKey(r.Project, r.User), r.User
	default:
		return fmt.Errorf("quota record has unknown scope %q", r.Scope)
	}
	if err := checkQuotaID(r.Scope, name); err != nil {
		return err
	}
	if _, dup := into[key]; dup {
		return fmt.Errorf("quota limits of %s %q appear twice", r.Scope, strings.ReplaceAll(key, "\x00", "/"))
	}
	into[key] = r.Limits
	return nil
}

// SetQuotaDefaults records [quota] as every live peer is configured: the
// last layer of every limit. It replaces the limits recorded before; a
// resource it leaves out is unlimited. The leader commits it when the
// peers agree on limits the state does not hold yet (cluster).
type SetQuotaDefaults struct {
	Meta
	Limits QuotaLimits `json:"limits"`
}

// Type implements Command.
func (*SetQuotaDefaults) Type() CommandType { return CmdSetQuotaDefaults }

// UpdateQuotas sets limits of one layer: a quota class (Class), a
// project (ProjectID), or a user within a project (ProjectID and UserID),
// as os-quota-class-sets and os-quota-sets update them; the resources it
// leaves out keep their limits. Without Force, a project's or a user's
// new limit must hold what it already uses, and a user's must fit what
// the project's limit leaves to its users, as Nova checks.
type UpdateQuotas struct {
	Meta
	Class     string      `json:"class,omitempty"`
	ProjectID string      `json:"project_id,omitempty"`
	UserID    string      `json:"user_id,omitempty"`
	Limits    QuotaLimits `json:"limits"`
	Force     bool        `json:"force,omitempty"`
}

// Type implements Command.
func (*UpdateQuotas) Type() CommandType { return CmdUpdateQuotas }

// DeleteQuotas reverts a project, and every user in it, or one user of a
// project when UserID is set, to the defaults (os-quota-sets delete). A
// project without limits of its own is no error.
type DeleteQuotas struct {
	Meta
	ProjectID string `json:"project_id"`
	UserID    string `json:"user_id,omitempty"`
}

// Type implements Command.
func (*DeleteQuotas) Type() CommandType { return CmdDeleteQuotas }

func init() {
	register[SetQuotaDefaults](CmdSetQuotaDefaults, "SetQuotaDefaults", applySetQuotaDefaults)
	register[UpdateQuotas](CmdUpdateQuotas, "UpdateQuotas", applyUpdateQuotas)
	register[DeleteQuotas](CmdDeleteQuotas, "DeleteQuotas", applyDeleteQuotas)
}

func applySetQuotaDefaults(st *state, c *SetQuotaDefaults) (any, error) {
	if err := checkQuotaLimits(c.Limits); err != nil {
		return nil, err
	}
	st.quotas.defaults = maps.Clone(c.Limits)
	if st.quotas.defaults == nil {
		st.quotas.defaults = QuotaLimits{}
	}
	return nil, nil
}

func applyUpdateQuotas(st *state, c *UpdateQuotas) (any, error) {
	if err := checkQuotaLimits(c.Limits); err != nil {
		return nil, err
	}
	q := &st.quotas
	var into map[string]QuotaLimits
	var key string
	switch {
	case c.Class != "" && (c.ProjectID != "" || c.UserID != ""):
		return nil, fmt.Errorf("%w: quotas are set for a class or for a project, not both", ErrInvalid)
	case c.Class != "":
		if err := checkQuotaID("class", c.Class); err != nil {
			return nil, err
		}
		into, key = q.classes, c.Class
	case c.UserID != "":
		if err := errors.Join(checkQuotaID("project", c.ProjectID), checkQuotaID("user", c.UserID)); err != nil {
			return nil, err
		}
		into, key = q.users, quotaUserKey(c.ProjectID, c.UserID)
	default:
		if err := checkQuotaID("project", c.ProjectID); err != nil {
			return nil, err
		}
		into, key = q.projects, c.ProjectID
	}
	if c.Class == "" && !c.Force {
		if err := st.checkSettable(c.ProjectID, c.UserID, c.Limits); err != nil {
			return nil, err
		}
	}
	if len(c.Limits) == 0 {
		return nil, nil
	}
	set := maps.Clone(into[key])
	if set == nil {
		set = QuotaLimits{}
	}
	maps.Copy(set, c.Limits)
	into[key] = set
	return nil, nil
}

// checkSettable is Nova's check of a new project or user limit
// (get_settable_quotas and _validate_quota_limit), resource by resource
// in name order: at least what the scope uses (and, for a project, what
// its users' limits add up to), and for a user at most what the
// project's limit leaves to its users.
func (st *state) checkSettable(project, user string, limits QuotaLimits) error {
	q := &st.quotas
	inUse := st.quotaUsage(project, user)
	users := q.userOverrides(project)
	for _, r := range sortedKeys(limits) {
		v := limits[r]
		limit := q.projectLimit(project, r)
		remains := limit // what the users' limits leave of the project's
		for _, k := range users {
			if l, ok := q.users[k][r]; ok {
				remains -= l
			}
		}
		var minimum, maximum int64
		if user == "" {
			minimum, maximum = max(subQuota(limit, remains), inUse[r]), QuotaUnlimited
		} else {
			minimum, maximum = inUse[r], addQuota(remains, q.users[quotaUserKey(project, user)][r])
		}
		if infinite(v) < infinite(minimum) {
			return novaError(ErrInvalid, fmt.Sprintf("Quota limit %d for %s must be greater than or equal to already used and reserved %d.", v, r, minimum))
		}
		if infinite(v) > infinite(maximum) {
			return novaError(ErrInvalid, fmt.Sprintf("Quota limit %d for %s must be less than or equal to %d.", v, r, maximum))
		}
	}
	return nil
}

// subQuota and addQuota are Nova's _sub_quota_values and
// _sum_quota_values: unlimited when either side is.
func subQuota(a, b int64) int64 {
	if a <= QuotaUnlimited || b <= QuotaUnlimited {
		return QuotaUnlimited
	}
	return a - b
}

func addQuota(a, b int64) int64 {
	if a <= QuotaUnlimited || b <= QuotaUnlimited {
		return QuotaUnlimited
	}
	return a + b
}

// infinite orders limits with unlimited above every number.
func infinite(v int64) float64 {
	if v == QuotaUnlimited {
		return math.Inf(1)
	}
	return float64(v)
}

func applyDeleteQuotas(st *state, c *DeleteQuotas) (any, error) {
	if err := checkQuotaID("project", c.ProjectID); err != nil {
		return nil, err
	}
	q := &st.quotas
	if c.UserID != "" {
		if err := checkQuotaID("user", c.UserID); err != nil {
			return nil, err
		}
		delete(q.users, quotaUserKey(c.ProjectID, c.UserID))
		return nil, nil
	}
	for _, k := range q.userOverrides(c.ProjectID) {
		delete(q.users, k)
	}
	delete(q.projects, c.ProjectID)
	return nil, nil
}
