package fsm

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The fields of a server that Nova's API lets a user set and edit beyond
// its name: the description (2.19), the access addresses, the tags
// (2.26), the metadata (through /servers/{id}/metadata), and what a boot
// request gives every server it creates (the reservation id and launch
// index of a multiple create). Servers that hold any of the fields of
// snapshot format 4 (needsFormat4) are written in that format; the
// commands that set them (41 to 45) are used only once every live peer
// knows them, so an older peer never meets one.

// Limits of a server's fields, as Nova has them.
const (
	MaxDescriptionLen = 255 // characters
	MaxTags           = 50  // Nova's instance.MAX_TAG_COUNT
	MaxTagLen         = 60  // characters: Nova's tag.MAX_TAG_LENGTH
	// DefaultMetadataItems is Nova's default metadata_items quota: the
	// most metadata items one server holds (metadataItemsLimit).
	DefaultMetadataItems = 128
	// MaxReservationIDLen bounds a reservation id ("r-" and 8 characters
	// as the API draws them).
	MaxReservationIDLen = 64
	// maxAccessIPLen bounds an access address before it is parsed.
	maxAccessIPLen = 64
)

// metadataItemsLimit is the most metadata items a server of project may
// hold: the project's metadata_items quota (quota.go), Nova's default
// while no quota is recorded (before every peer knows quotas), and no
// limit for -1 (Apply's bounds of stored text still hold).
func metadataItemsLimit(st *state, project string) int {
	q := &st.quotas
	if len(q.defaults) == 0 && len(q.classes) == 0 && len(q.projects) == 0 {
		return DefaultMetadataItems
	}
	l := q.projectLimit(project, QuotaMetadataItems)
	if l < 0 || l > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(l)
}

// MetadataItemsLimit is the most metadata items a server of project may
// hold, as Apply enforces it.
func (s *Store) MetadataItemsLimit(project string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return metadataItemsLimit(s.st, project)
}

// ServerFields are what a boot request sets on its servers beyond what
// CreateServer carries: the fields of snapshot format 4.
type ServerFields struct {
	// Description is nil for none (Nova's null).
	Description *string  `json:"description,omitempty"`
	AccessIPv4  string   `json:"access_ip_v4,omitempty"`
	AccessIPv6  string   `json:"access_ip_v6,omitempty"`
	Tags        []string `json:"tags,omitempty"`
}

// check validates the fields and returns them with the tags normalized.
func (f ServerFields) check() (ServerFields, error) {
	if f.Description != nil {
		if err := ValidateDescription(*f.Description); err != nil {
			return f, err
		}
	}
	if err := ValidateAccessIP(f.AccessIPv4, false); err != nil {
		return f, err
	}
	if err := ValidateAccessIP(f.AccessIPv6, true); err != nil {
		return f, err
	}
	tags, err := NormalizeTags(f.Tags)
	f.Tags = tags
	return f, err
}

// needsFormat4 reports whether s holds what snapshot format 3 cannot
// carry: only commands 41 to 45 write it.
func needsFormat4(s *Server) bool {
	return s.ReservationID != "" || s.LaunchIndex != 0 || s.Description != nil || s.AccessIPv4 != "" ||
		s.AccessIPv6 != "" || len(s.Tags) > 0 || s.Action != nil && s.Action.PreserveEphemeral || s.AdminPass != ""
}

// StringChange is a new value for a nullable field of a server: Null
// clears it (Nova's null), else it becomes Value. A nil *StringChange
// leaves the field as it is.
type StringChange struct {
	Value string `json:"value,omitempty"`
	Null  bool   `json:"null,omitempty"`
}

// printable reports whether r is printable as Nova's schemas have it: not
// a control, format, private-use or unassigned character, and no space
// but the plain ones (Unicode category Zs).
func printable(r rune) bool {
	return !unicode.Is(unicode.C, r) && (!unicode.Is(unicode.Z, r) || unicode.Is(unicode.Zs, r))
}

// ValidateDescription checks a server's description as Nova's schema
// does: at most MaxDescriptionLen printable characters.
func ValidateDescription(d string) error {
	if !utf8.ValidString(d) || utf8.RuneCountInString(d) > MaxDescriptionLen {
		return fmt.Errorf("%w: Invalid input for field/attribute description: it must be at most %d characters of text", ErrInvalid, MaxDescriptionLen)
	}
	if i := strings.IndexFunc(d, func(r rune) bool { return !printable(r) }); i >= 0 {
		return fmt.Errorf("%w: Invalid input for field/attribute description: character %q is not printable", ErrInvalid, []rune(d[i:])[0])
	}
	return nil
}

// ValidateAccessIP checks an accessIPv4 (v6 false) or accessIPv6 address;
// "" is none.
func ValidateAccessIP(ip string, v6 bool) error {
	if ip == "" {
		return nil
	}
	field, kind := "accessIPv4", "an IPv4"
	if v6 {
		field, kind = "accessIPv6", "an IPv6"
	}
	a, err := netip.ParseAddr(ip)
	if err != nil || len(ip) > maxAccessIPLen || v6 != a.Is6() || a.Zone() != "" {
		return fmt.Errorf("%w: Invalid input for field/attribute %s. Value: %.64q is not %s address", ErrInvalid, field, ip, kind)
	}
	return nil
}

// ValidateTag checks one server tag as Nova does: 1 to MaxTagLen
// characters, neither '/' nor ','.
func ValidateTag(tag string) error {
	n := utf8.RuneCountInString(tag)
	if n == 0 || n > MaxTagLen || !utf8.ValidString(tag) || strings.ContainsAny(tag, "/,") {
		return fmt.Errorf("%w: Tag '%.64s' is invalid. It must be a non empty string of at most %d characters without characters '/' and ','", ErrInvalid, tag, MaxTagLen)
	}
	return nil
}

// NormalizeTags checks tags (at most MaxTags, each ValidateTag) and
// returns them sorted without duplicates (nil for none), as a server
// keeps them.
func NormalizeTags(tags []string) ([]string, error) {
	if len(tags) > MaxTags {
		return nil, fmt.Errorf("%w: The number of tags exceeded the per-server limit %d", ErrInvalid, MaxTags)
	}
	for _, t := range tags {
		if err := ValidateTag(t); err != nil {
			return nil, err
		}
	}
	if len(tags) == 0 {
		return nil, nil
	}
	out := slices.Clone(tags)
	slices.Sort(out)
	return slices.Compact(out), nil
}

// ValidateMetadataItem checks one metadata item as Nova's schema does: a
// key of 1 to 255 letters, digits, spaces and "-_:.", a value of at most
// 255 characters.
func ValidateMetadataItem(k, v string) error {
	if n := utf8.RuneCountInString(k); n == 0 || n > MaxMetadataKeyLen || strings.IndexFunc(k, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_:. ", r))
	}) >= 0 {
		return fmt.Errorf("%w: Invalid input for field/attribute metadata: key %.64q must be 1 to %d letters, digits, spaces and '-_:.'", ErrInvalid, k, MaxMetadataKeyLen)
	}
	if !utf8.ValidString(v) || utf8.RuneCountInString(v) > MaxMetadataValueLen {
		return fmt.Errorf("%w: Invalid input for field/attribute metadata: the value of %q is longer than %d characters", ErrInvalid, k, MaxMetadataValueLen)
	}
	return nil
}

// checkMetadata checks the items given (whose keys are sorted first, so
// that every peer reports the same one) and that total, the number of
// items the server would hold, fits the project's limit.
func checkMetadata(st *state, project string, given map[string]string, total int) error {
	for _, k := range sortedKeys(given) {
		if err := ValidateMetadataItem(k, given[k]); err != nil {
			return err
		}
	}
	if limit := metadataItemsLimit(st, project); total > limit {
		return quotaExceeded(fmt.Sprintf("Maximum number of metadata items exceeds %d", limit)) // Nova's 403
	}
	return nil
}

// UpdateServerFields is PUT /servers/{id}: a new name, description or
// access address. Nil fields stay.
type UpdateServerFields struct {
	Meta
	ID          string        `json:"id"`
	Name        *string       `json:"name,omitempty"`
	Description *StringChange `json:"description,omitempty"`
	AccessIPv4  *string       `json:"access_ip_v4,omitempty"`
	AccessIPv6  *string       `json:"access_ip_v6,omitempty"`
}

// Type implements Command.
func (*UpdateServerFields) Type() CommandType { return CmdUpdateServerFields }

func init() {
	register[UpdateServerFields](CmdUpdateServerFields, "UpdateServerFields", applyUpdateServerFields)
}

func applyUpdateServerFields(st *state, c *UpdateServerFields) (any, error) {
	s, ok := st.servers[c.ID]
	if !ok || s.Status == StatusDeleted {
		return nil, errServerNotFound(c.ID)
	}
	s = cloneServer(s)
	if err := editFields(&s, c.Name, c.Description, c.AccessIPv4, c.AccessIPv6); err != nil {
		return nil, err
	}
	s.UpdatedAt = c.At.UTC()
	st.putServer(s)
	return cloneServer(s), nil
}

// editFields checks and sets the fields a PUT and a rebuild may change on
// s (a copy); nil ones stay.
func editFields(s *Server, name *string, desc *StringChange, v4, v6 *string) error {
	if name != nil && (*name == "" || len(*name) > maxServerNameLen) {
		return fmt.Errorf("%w: server name must be 1 to %d characters", ErrInvalid, maxServerNameLen)
	}
	if desc != nil && !desc.Null {
		if err := ValidateDescription(desc.Value); err != nil {
			return err
		}
	}
	if v4 != nil {
		if err := ValidateAccessIP(*v4, false); err != nil {
			return err
		}
	}
	if v6 != nil {
		if err := ValidateAccessIP(*v6, true); err != nil {
			return err
		}
	}
	if name != nil {
		s.Name = *name
	}
	if desc != nil {
		s.Description = nil
		if !desc.Null {
			d := desc.Value
			s.Description = &d
		}
	}
	if v4 != nil {
		s.AccessIPv4 = *v4
	}
	if v6 != nil {
		s.AccessIPv6 = *v6
	}
	return nil
}
