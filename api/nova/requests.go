package nova

import (
	"encoding/json"

	"github.com/corral-dev/corral/fsm"
)

// The bodies of the compute API's writes as the handlers read them. The
// wire package declares what corral's own clients send; Nova's schemas
// take more: a flavor's sizes as strings of digits, its id as a number,
// booleans as words, the fields its Ironic driver accepts and ignores
// (OS-DCF:diskConfig, access addresses). These types hold every field of
// wire's (a test keeps them so), with those scalars raw for input.go to
// read as Nova does.

// flavorCreateRequest is POST /flavors.
type flavorCreateRequest struct {
	Flavor *flavorCreate `json:"flavor"`
}

// flavorCreate is wire.FlavorCreate as Nova reads it.
type flavorCreate struct {
	Name        *string         `json:"name"`
	ID          json.RawMessage `json:"id"` // a string, a number or null (an id is made)
	RAM         json.RawMessage `json:"ram"`
	VCPUs       json.RawMessage `json:"vcpus"`
	Disk        json.RawMessage `json:"disk"`
	Ephemeral   json.RawMessage `json:"OS-FLV-EXT-DATA:ephemeral"`
	Swap        json.RawMessage `json:"swap"`
	RxTxFactor  json.RawMessage `json:"rxtx_factor"`
	IsPublic    json.RawMessage `json:"os-flavor-access:is_public"`
	Description *string         `json:"description"` // null: none
}

// serverCreateRequest is POST /servers: the server and the scheduler's
// hints (under either of Nova's names; corral's scheduler takes none).
type serverCreateRequest struct {
	Server         *serverCreateIn `json:"server"`
	SchedulerHints map[string]any  `json:"os:scheduler_hints"`
	LegacyHints    map[string]any  `json:"OS-SCH-HNT:scheduler_hints"`
}

// serverCreateIn is wire.ServerCreate as Nova reads it.
type serverCreateIn struct {
	Name             *string           `json:"name"`
	ImageRef         string            `json:"imageRef"`
	FlavorRef        json.RawMessage   `json:"flavorRef"` // a string or an integer
	Networks         json.RawMessage   `json:"networks"`
	Metadata         map[string]string `json:"metadata"`
	Description      *string           `json:"description"`
	SecurityGroups   []securityGroup   `json:"security_groups"`
	KeyName          *string           `json:"key_name"`
	AvailabilityZone *string           `json:"availability_zone"`
	UserData         string            `json:"user_data"`
	ConfigDrive      json.RawMessage   `json:"config_drive"`
	AdminPass        *string           `json:"adminPass"`
	AccessIPv4       *string           `json:"accessIPv4"`
	AccessIPv6       *string           `json:"accessIPv6"`
	MinCount         json.RawMessage   `json:"min_count"`
	MaxCount         json.RawMessage   `json:"max_count"`
	Tags             []string          `json:"tags"`
	DiskConfig       *string           `json:"OS-DCF:diskConfig"`
	// ReturnReservationID asks for the reservation id instead of the
	// first server (Nova's multiple create).
	ReturnReservationID json.RawMessage `json:"return_reservation_id"`
}

// optString is a nullable string field of a request: Set when it is
// present, Null when it is JSON null.
type optString struct {
	Set, Null bool
	Value     string
}

// UnmarshalJSON implements json.Unmarshaler (it is called for null too).
func (o *optString) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Null = true
		return nil
	}
	return json.Unmarshal(b, &o.Value)
}

// change is the fsm's change of the field, nil when it is absent.
func (o optString) change() *fsm.StringChange {
	if !o.Set {
		return nil
	}
	return &fsm.StringChange{Value: o.Value, Null: o.Null}
}

// securityGroup is one of a boot's security groups, by name.
type securityGroup struct {
	Name *string `json:"name"`
}

// serverUpdateRequest is PUT /servers/{id}.
type serverUpdateRequest struct {
	Server *serverUpdateIn `json:"server"`
}

// serverUpdateIn is wire.ServerUpdate as Nova reads it: the name, and the
// fields Nova's update takes that corral does not keep.
type serverUpdateIn struct {
	Name        *string   `json:"name"`
	DiskConfig  *string   `json:"OS-DCF:diskConfig"`
	AccessIPv4  *string   `json:"accessIPv4"`
	AccessIPv6  *string   `json:"accessIPv6"`
	Description optString `json:"description"` // null: none
}

// rebuildAction is wire.RebuildAction as Nova reads it.
type rebuildAction struct {
	ImageRef          string            `json:"imageRef"`
	Name              *string           `json:"name"`
	AdminPass         *string           `json:"adminPass"`
	Metadata          map[string]string `json:"metadata"`
	PreserveEphemeral json.RawMessage   `json:"preserve_ephemeral"`
	DiskConfig        *string           `json:"OS-DCF:diskConfig"`
	AccessIPv4        *string           `json:"accessIPv4"`
	AccessIPv6        *string           `json:"accessIPv6"`
	Description       optString         `json:"description"` // null: none
	KeyName           optString         `json:"key_name"`    // null: none (2.54)
	UserData          optString         `json:"user_data"`   // null: none (2.57)
}
