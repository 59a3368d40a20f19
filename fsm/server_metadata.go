package fsm

import (
	"fmt"
	"maps"
	"slices"
)

// A server's metadata (/servers/{id}/metadata) and tags
// (/servers/{id}/tags), edited as Nova's server_metadata and server_tags
// controllers edit them: metadata only while the server is active or
// stopped with no task in progress, and not while it is locked (but by
// an admin); tags while it is active or stopped.

// Operations of SetServerMetadata.
const (
	MetadataReplace = "replace" // PUT /servers/{id}/metadata: the items given are all the server keeps
	MetadataMerge   = "merge"   // POST /servers/{id}/metadata, PUT /servers/{id}/metadata/{key}
	MetadataDelete  = "delete"  // DELETE /servers/{id}/metadata/{key}
)

// SetServerMetadata changes a server's metadata.
type SetServerMetadata struct {
	Meta
	ID       string            `json:"id"`
	Op       string            `json:"op"`
	Metadata map[string]string `json:"metadata,omitempty"` // replace, merge
	Key      string            `json:"key,omitempty"`      // delete
	// Admin lets the request change a locked server's, as Nova lets admins.
	Admin bool `json:"admin,omitempty"`
}

// Type implements Command.
func (*SetServerMetadata) Type() CommandType { return CmdSetServerMetadata }

// Operations of SetServerTags.
const (
	TagsReplace = "replace" // PUT /servers/{id}/tags (DELETE /servers/{id}/tags: no tags)
	TagAdd      = "add"     // PUT /servers/{id}/tags/{tag}
	TagDelete   = "delete"  // DELETE /servers/{id}/tags/{tag}
)

// SetServerTags changes a server's tags.
type SetServerTags struct {
	Meta
	ID   string   `json:"id"`
	Op   string   `json:"op"`
	Tags []string `json:"tags,omitempty"` // replace
	Tag  string   `json:"tag,omitempty"`  // add, delete
}

// Type implements Command.
func (*SetServerTags) Type() CommandType { return CmdSetServerTags }

func init() {
	register[SetServerMetadata](CmdSetServerMetadata, "SetServerMetadata", applySetServerMetadata)
	register[SetServerTags](CmdSetServerTags, "SetServerTags", applySetServerTags)
}

// errNoMetadataItem is Nova's answer to a metadata key a server does not
// hold.
const errNoMetadataItem = "Metadata item was not found"

func applySetServerMetadata(st *state, c *SetServerMetadata) (any, error) {
	s, ok := st.servers[c.ID]
	if !ok || s.Status == StatusDeleted {
		return nil, errServerNotFound(c.ID)
	}
	action := "update metadata"
	switch c.Op {
	case MetadataReplace, MetadataMerge:
		if c.Key != "" {
			return nil, fmt.Errorf("%w: a metadata %s names no key", ErrInvalid, c.Op)
		}
	case MetadataDelete:
		if len(c.Metadata) > 0 {
			return nil, fmt.Errorf("%w: a metadata delete carries no items", ErrInvalid)
		}
		if _, has := s.Metadata[c.Key]; !has {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, errNoMetadataItem)
		}
		action = "delete metadata"
	default:
		return nil, fmt.Errorf("%w: metadata operation %q is unknown", ErrInvalid, c.Op)
	}
	if s.Locked && !c.Admin {
		return nil, fmt.Errorf("%w: Instance %s is locked", ErrConflict, c.ID)
	}
	if err := editableState(s, action, true); err != nil {
		return nil, err
	}
	var next map[string]string
	switch c.Op {
	case MetadataReplace:
		next = maps.Clone(c.Metadata)
	case MetadataMerge:
		next = maps.Clone(s.Metadata)
		if next == nil {
			next = make(map[string]string, len(c.Metadata))
		}
		maps.Copy(next, c.Metadata)
	case MetadataDelete:
		next = maps.Clone(s.Metadata)
		delete(next, c.Key)
	}
	if err := checkMetadata(st, s.Project(), c.Metadata, len(next)); err != nil {
		return nil, err
	}
	if len(next) == 0 {
		next = nil
	}
	s = cloneServer(s)
	s.Metadata, s.UpdatedAt = next, c.At.UTC()
	st.putServer(s)
	return cloneServer(s), nil
}

// editableState refuses an edit of a server that is not active or
// stopped (or, with idle, that has a task in progress), in Nova's words.
func editableState(s Server, action string, idle bool) error {
	if s.Status != StatusActive && s.Status != StatusShutoff {
		return fmt.Errorf("%w: Cannot '%s' instance %s while it is in vm_state %s", ErrConflict, action, s.ID, vmStateOf(s.Status))
	}
	if idle && s.TaskState != "" {
		return fmt.Errorf("%w: Cannot '%s' instance %s while it is in task_state %s", ErrConflict, action, s.ID, s.TaskState)
	}
	return nil
}

func applySetServerTags(st *state, c *SetServerTags) (any, error) {
	s, ok := st.servers[c.ID]
	if !ok || s.Status == StatusDeleted {
		return nil, errServerNotFound(c.ID)
	}
	var next []string
	var action string
	switch c.Op {
	case TagsReplace:
		if c.Tag != "" {
			return nil, fmt.Errorf("%w: a tags replace names no single tag", ErrInvalid)
		}
		tags, err := NormalizeTags(c.Tags)
		if err != nil {
			return nil, err
		}
		next, action = tags, "update tags"
		if len(tags) == 0 {
			action = "delete tags"
		}
	case TagAdd, TagDelete:
		if len(c.Tags) > 0 {
			return nil, fmt.Errorf("%w: a tag %s carries no list", ErrInvalid, c.Op)
		}
		if err := ValidateTag(c.Tag); err != nil {
			return nil, err
		}
		_, has := slices.BinarySearch(s.Tags, c.Tag)
		switch {
		case c.Op == TagDelete && !has:
			return nil, fmt.Errorf("%w: Instance %s has no tag '%s'", ErrNotFound, c.ID, c.Tag)
		case c.Op == TagDelete:
			next, action = slices.DeleteFunc(slices.Clone(s.Tags), func(t string) bool { return t == c.Tag }), "delete tag"
		case has: // already there: nothing changes
			if err := editableState(s, "update tag", false); err != nil {
				return nil, err
			}
			return cloneServer(s), nil
		case len(s.Tags) >= MaxTags:
			return nil, fmt.Errorf("%w: The number of tags exceeded the per-server limit %d", ErrInvalid, MaxTags)
		default:
			next, action = append(slices.Clone(s.Tags), c.Tag), "update tag"
			slices.Sort(next)
		}
	default:
		return nil, fmt.Errorf("%w: tags operation %q is unknown", ErrInvalid, c.Op)
	}
	if err := editableState(s, action, false); err != nil {
		return nil, err
	}
	if len(next) == 0 {
		next = nil
	}
	s = cloneServer(s)
	s.Tags, s.UpdatedAt = next, c.At.UTC()
	st.putServer(s)
	return cloneServer(s), nil
}
