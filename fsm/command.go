package fsm

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// CommandType is the first byte of every encoded command. See the package
// documentation for the numbering rules.
type CommandType uint8

// IgnoreUnknownFlag, set on a command type, lets peers that do not know the
// type skip it instead of stopping.
const IgnoreUnknownFlag CommandType = 0x80

// Command types. Append-only: never renumber, never reuse a number.
const (
	CmdRegisterHost          CommandType = 1
	CmdSetHostStatus         CommandType = 2
	CmdCreateFlavor          CommandType = 3
	CmdDeleteFlavor          CommandType = 4
	CmdSetFlavorExtraSpecs   CommandType = 5
	CmdDeleteFlavorExtraSpec CommandType = 6
	CmdNoop                  CommandType = 7 // does nothing; used by tests and barriers
	CmdCreateServer          CommandType = 8
	CmdSetServerTask         CommandType = 9
	CmdReserveNode           CommandType = 10
	CmdReleaseNode           CommandType = 11
	CmdDeleteServer          CommandType = 12
	CmdSyncNodes             CommandType = 13
	CmdSetHostDrain          CommandType = 14
	CmdReassignServers       CommandType = 15
	CmdReportInventory       CommandType = 16
	CmdMigrateFlavors        CommandType = 17
	CmdAdoptServer           CommandType = 18
	CmdPurgeServers          CommandType = 19
	CmdUpdateFlavor          CommandType = 20
	CmdSetFlavorAccess       CommandType = 21
	CmdCreateKeyPair         CommandType = 22
	CmdDeleteKeyPair         CommandType = 23
	CmdRequestServerAction   CommandType = 24
	CmdFinishServerAction    CommandType = 25
	CmdUpdateServer          CommandType = 26
	CmdStartServerAction     CommandType = 27
	// 28..31: cluster security and recovery.
	CmdCreateServers      CommandType = 32
	CmdReserveNodeAndTask CommandType = 33
	// 34..39: batching and mass provisioning.
	CmdRequestServerActionWithID CommandType = 40
	// 41..45: the server fields and surfaces of Nova's API.
	CmdCreateServerSets   CommandType = 41
	CmdUpdateServerFields CommandType = 42
	CmdRebuildServer      CommandType = 43
	CmdSetServerMetadata  CommandType = 44
	CmdSetServerTags      CommandType = 45
	CmdEnableFeature      CommandType = 46
	CmdCreateServerGroup  CommandType = 47
	CmdDeleteServerGroup  CommandType = 48
	CmdResetServerState   CommandType = 49 // reset_state.go
	// 50: reserved for the instance actions, server groups and usage of
	// 46..48.
	// 51..55: quotas (quota.go); 54 and 55 are kept for them.
	CmdSetQuotaDefaults CommandType = 51
	CmdUpdateQuotas     CommandType = 52
	CmdDeleteQuotas     CommandType = 53
	// 56..60: the Neutron ports of servers (server_ports.go).
	CmdSetPortIntent    CommandType = 56
	CmdRecordServerPort CommandType = 57
	CmdForgetServerPort CommandType = 58
	// 59, 60: os-interface on a running server (server_interfaces.go).
	CmdRequestInterfaceAction CommandType = 59
	CmdFinishInterfaceAction  CommandType = 60
	// 61: a rebuild of a stopped server ends stopped (rebuild_stopped.go).
	CmdStopAfterRebuild CommandType = 61
	// 63: the external events of Nova's os-server-external-events
	// (external_events.go).
	CmdRecordExternalEvents CommandType = 63
	// 64, 65: the security groups of a server's ports (server_secgroups.go).
	CmdRequestSecurityGroupAction CommandType = 64
	CmdFinishSecurityGroupAction  CommandType = 65
)

// String returns the command's name, or CommandType(N) for an unknown type.
func (t CommandType) String() string {
	if spec, ok := registry[t]; ok {
		return spec.name
	}
	return fmt.Sprintf("CommandType(%d)", uint8(t))
}

// Ignorable reports whether t carries IgnoreUnknownFlag.
func (t CommandType) Ignorable() bool { return t&IgnoreUnknownFlag != 0 }

// Meta is embedded in every command. The leader fills At (UTC) before
// proposing; Apply uses it as the time of every change the command makes.
type Meta struct {
	At        time.Time `json:"at"`
	RequestID string    `json:"request_id,omitempty"`
	// Bounded, set by the leader once every live peer applies them, puts
	// the command under the bounds of text.go. Entries without it, all
	// those of older versions among them, replay as they always did.
	Bounded bool `json:"bounded,omitempty"`
}

// Header returns m, which gives every command embedding Meta access to it.
func (m *Meta) Header() *Meta { return m }

// Command is implemented by pointers to the command structs of this package
// (for example *CreateFlavor).
type Command interface {
	Type() CommandType
	Header() *Meta
}

// Noop changes nothing. It is used as a barrier and by tests.
type Noop struct {
	Meta
}

// Type implements Command.
func (*Noop) Type() CommandType { return CmdNoop }

func init() {
	register[Noop](CmdNoop, "Noop", func(*state, *Noop) (any, error) { return nil, nil })
}

// commandSpec is how the store decodes and applies one command type.
type commandSpec struct {
	name  string
	new   func() Command
	apply func(st *state, c Command) (any, error)
	typ   reflect.Type // T of register[T]
	mp    *mpType      // how EncodingMsgpack writes and reads T (mpcodec.go)
}

// registry maps every known command type to its spec. It is filled by init
// functions and read-only afterwards.
var registry = map[CommandType]commandSpec{}

// register adds command type t, whose body is T, to the registry. apply must
// either change st completely and return the result value, or return an error
// wrapping ErrNotFound, ErrConflict or ErrInvalid and leave st untouched.
// Registration mistakes are programming errors and stop the program at start.
func register[T any, P interface {
	*T
	Command
}](t CommandType, name string, apply func(st *state, c P) (any, error)) {
	if _, dup := registry[t]; dup {
		panic(fmt.Sprintf("fsm: command type %d registered twice", uint8(t)))
	}
	if byte(t) == binaryEntry {
		panic(fmt.Sprintf("fsm: command %s: type %d marks the entries of binary encodings", name, uint8(t)))
	}
	if got := P(new(T)).Type(); got != t {
		panic(fmt.Sprintf("fsm: command %s reports type %d, registered as %d", name, uint8(got), uint8(t)))
	}
	registry[t] = commandSpec{
		name:  name,
		typ:   reflect.TypeFor[T](),
		mp:    mpTypeOf(reflect.TypeFor[T]()),
		new:   func() Command { return P(new(T)) },
		apply: func(st *state, c Command) (any, error) { return apply(st, c.(P)) },
	}
}

// KnownCommands lists every command type this peer knows, ascending, as
// decimal numbers and ranges separated by commas ("1-26,32-33"): what a
// peer advertises (in gossip metadata, which is small) so that the leader
// and owners use a new type only once every live peer can apply it.
func KnownCommands() string {
	types := CommandTypes()
	vals := make([]uint8, len(types))
	for i, t := range types {
		vals[i] = uint8(t)
	}
	return rangeList(vals)
}

// CommandKnownIn reports whether list, as KnownCommands writes it, names t.
func CommandKnownIn(list string, t CommandType) bool { return listHas(list, uint8(t)) }

// rangeList writes ascending vals as decimal numbers and ranges separated
// by commas ("1-26,32-33").
func rangeList(vals []uint8) string {
	var b []byte
	for i := 0; i < len(vals); {
		j := i
		for j+1 < len(vals) && vals[j+1] == vals[j]+1 {
			j++
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(vals[i]), 10)
		if j > i {
			b = append(b, '-')
			b = strconv.AppendUint(b, uint64(vals[j]), 10)
		}
		i = j + 1
	}
	return string(b)
}

// listHas reports whether list, as rangeList writes it, names v.
func listHas(list string, v uint8) bool {
	for list != "" {
		item, rest, _ := strings.Cut(list, ",")
		list = rest
		lo, hi, isRange := strings.Cut(item, "-")
		if !isRange {
			hi = lo
		}
		l, err1 := strconv.ParseUint(lo, 10, 8)
		h, err2 := strconv.ParseUint(hi, 10, 8)
		if err1 == nil && err2 == nil && uint64(v) >= l && uint64(v) <= h {
			return true
		}
	}
	return false
}

// CommandTypes returns every command type this peer knows, in ascending order.
func CommandTypes() []CommandType {
	types := make([]CommandType, 0, len(registry))
	for t := range registry {
		types = append(types, t)
	}
	slices.Sort(types)
	return types
}
