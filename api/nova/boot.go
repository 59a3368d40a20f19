package nova

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
)

// The checks of a boot's body (POST /servers) beyond its JSON shape, as
// Nova's schema of the request's microversion makes them.

// unexpected is Nova's 400 for a field its schema does not have at the
// request's microversion.
func unexpected(field string, since string) error {
	return core.BadRequest("Invalid input for field/attribute server. Additional properties are not allowed ('%s' was unexpected): it needs microversion %s", field, since)
}

// checkBoot checks every field of a boot but its image and networks and
// returns its flavorRef.
func (h *Handlers) checkBoot(c echo.Context, in *serverCreateIn) (string, error) {
	if in.Name == nil {
		return "", core.BadRequest("Invalid input for field/attribute server. 'name' is a required property")
	}
	if err := checkName("name", *in.Name); err != nil {
		return "", err
	}
	if isNull(in.FlavorRef) {
		return "", core.BadRequest("Invalid input for field/attribute server. 'flavorRef' is a required property")
	}
	flavorRef, err := novaStringOrNumber("flavorRef", in.FlavorRef)
	if err != nil {
		return "", err
	}
	if flavorRef == "" || len(flavorRef) > fsm.MaxImageRefLen {
		return "", core.BadRequest("Invalid flavorRef provided.")
	}
	if strings.TrimSpace(in.ImageRef) == "" {
		return "", core.BadRequest("Missing imageRef attribute: a bare-metal server boots from an image")
	}
	if _, _, err := checkCounts(in.MinCount, in.MaxCount); err != nil {
		return "", err
	}
	if len(in.ReturnReservationID) > 0 {
		if _, err := novaBoolean("return_reservation_id", in.ReturnReservationID); err != nil {
			return "", err
		}
	}
	if len(in.ConfigDrive) > 0 {
		// Ironic deploys every server with a config drive.
		if _, err := novaBoolean("config_drive", in.ConfigDrive); err != nil {
			return "", err
		}
	}
	if err := checkDiskConfig(in.DiskConfig); err != nil {
		return "", err
	}
	if err := checkAccessIPs(in.AccessIPv4, in.AccessIPv6); err != nil {
		return "", err
	}
	if in.Description != nil {
		if !mvAtLeast(c, 2, 19) {
			return "", unexpected("description", "2.19")
		}
		if err := checkDescription("description", *in.Description, maxNameLen); err != nil {
			return "", err
		}
	}
	if in.Tags != nil && !mvAtLeast(c, 2, 52) {
		return "", unexpected("tags", "2.52")
	}
	if len(in.Tags) > maxTags {
		return "", invalidInput("tags", fmt.Sprintf("%d tags", len(in.Tags)), fmt.Sprintf("a server has at most %d tags", maxTags))
	}
	for _, tag := range in.Tags {
		if err := checkTag("tags", tag); err != nil {
			return "", err
		}
	}
	for _, sg := range in.SecurityGroups {
		if sg.Name != nil {
			if err := checkName("name", *sg.Name); err != nil {
				return "", err
			}
		}
	}
	if h.networks == nil {
		// With [neutron] the groups are Neutron's (security_groups.go).
		if err := checkSecurityGroups(in.SecurityGroups); err != nil {
			return "", err
		}
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"key_name", in.KeyName}, {"availability_zone", in.AvailabilityZone}} {
		if f.v != nil {
			if err := checkName(f.name, *f.v); err != nil {
				return "", err
			}
		}
	}
	if err := checkMetadata(in.Metadata); err != nil {
		return "", err
	}
	if err := checkNetworksVersion(c, in.Networks); err != nil {
		return "", err
	}
	if err := checkUserData(in.UserData); err != nil {
		return "", err
	}
	return flavorRef, nil
}

// checkCounts holds min_count and max_count to Nova's rules: positive
// integers (or strings of digits), min_count at most max_count (which is
// min_count when absent). It returns them.
func checkCounts(minRaw, maxRaw json.RawMessage) (minCount, maxCount int, err error) {
	lo, hi := int64(1), int64(0)
	if len(minRaw) > 0 {
		if lo, err = novaInteger("min_count", minRaw, 1, math.MaxInt32); err != nil {
			return 0, 0, err
		}
	}
	hi = lo
	if len(maxRaw) > 0 {
		if hi, err = novaInteger("max_count", maxRaw, 1, math.MaxInt32); err != nil {
			return 0, 0, err
		}
	}
	if lo > hi {
		return 0, 0, core.BadRequest("min_count must be <= max_count")
	}
	return int(lo), int(hi), nil
}

// checkNetworksVersion holds a boot's networks to its microversion: from
// 2.37 networks is required ("auto", "none" or a list), as in Nova. Below
// 2.37 Nova takes only a list; corral also takes "auto" and "none" there,
// which its own clients and tests have long sent without a microversion.
func checkNetworksVersion(c echo.Context, raw json.RawMessage) error {
	if mvAtLeast(c, 2, 37) && (len(raw) == 0 || string(raw) == "null") {
		return core.BadRequest(`Invalid input for field/attribute server: 'networks' is a required property from microversion 2.37: give "auto", "none" or a list of {"uuid": ...}`)
	}
	return nil
}

// bootNetwork is one network of a boot, as Nova reads it.
type bootNetwork struct {
	UUID    *string `json:"uuid"`
	Port    *string `json:"port"`
	FixedIP *string `json:"fixed_ip"`
	Tag     *string `json:"tag"`
}

// netsForm is how a boot asked for its networks.
type netsForm int

const (
	netsOmitted netsForm = iota // no networks given (below 2.37)
	netsList                    // a list of networks and ports
	netsAuto                    // "auto": the one network the project may use
	netsNone                    // "none": no network
)

// parseNetworks reads a boot's networks as Nova does: "auto", "none" or a
// list of networks (a network's uuid, or a port), each network's uuid and
// each port a UUID, a port at most once and without a fixed address, at
// most fsm.MaxServerNetworks of them. It says which form the boot used.
func parseNetworks(c echo.Context, raw json.RawMessage) ([]fsm.Network, netsForm, error) {
	if isNull(raw) {
		return nil, netsOmitted, nil
	}
	var word string
	if json.Unmarshal(raw, &word) == nil {
		switch word {
		case "auto":
			return nil, netsAuto, nil
		case "none":
			return nil, netsNone, nil
		}
		return nil, 0, core.BadRequest(`networks %q must be "auto", "none" or a list of {"uuid": ...}`, shown(word))
	}
	var list []bootNetwork
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&list); err != nil {
		return nil, 0, core.BadRequest("networks must be a list of {\"uuid\": ..., \"port\": ..., \"fixed_ip\": ...}: %v", err)
	}
	if len(list) > fsm.MaxServerNetworks {
		return nil, 0, invalidInput("networks", fmt.Sprintf("%d networks", len(list)),
			fmt.Sprintf("a server attaches to at most %d networks", fsm.MaxServerNetworks))
	}
	tags := mvAtLeast(c, 2, 42) || microversion(c) == (core.Microversion{Major: 2, Minor: 32})
	out := make([]fsm.Network, 0, len(list))
	ports := map[string]bool{}
	for _, n := range list {
		var net fsm.Network
		if n.Tag != nil {
			if !tags {
				return nil, 0, unexpected("tag", "2.42")
			}
			if err := checkTag("tag", *n.Tag); err != nil {
				return nil, 0, err
			}
		}
		if n.FixedIP != nil {
			if !isIPAddress(*n.FixedIP) {
				return nil, 0, invalidInput("fixed_ip", *n.FixedIP, fmt.Sprintf("'%s' is not a 'ipv4' nor a 'ipv6'", shown(*n.FixedIP)))
			}
			net.FixedIP = *n.FixedIP
		}
		switch {
		case n.Port != nil && *n.Port != "":
			if uuid.Validate(*n.Port) != nil {
				return nil, 0, invalidInput("port", *n.Port, fmt.Sprintf("'%s' is not a 'uuid'", shown(*n.Port)))
			}
			if ports[*n.Port] {
				return nil, 0, core.BadRequest("Port ID '%s' was specified twice: you cannot attach a port multiple times.", *n.Port)
			}
			if n.FixedIP != nil {
				return nil, 0, core.BadRequest("Specified Fixed IP '%s' cannot be used with port '%s': the two cannot be specified together.", *n.FixedIP, *n.Port)
			}
			ports[*n.Port] = true
			net.Port = *n.Port
		case n.UUID == nil:
			return nil, 0, core.BadRequest("Bad network format: missing 'uuid'")
		case uuid.Validate(*n.UUID) != nil:
			return nil, 0, core.BadRequest("Bad networks format: network uuid is not in proper format (%s)", shown(*n.UUID))
		default:
			net.UUID = *n.UUID
		}
		out = append(out, net)
	}
	return out, netsList, nil
}

// checkUserData holds a boot's user_data to Nova's rules (base64, at most
// fsm.MaxUserDataLen bytes) and to corral's: it decodes to UTF-8 text.
func checkUserData(ud string) error {
	if ud == "" {
		return nil
	}
	if len(ud) > fsm.MaxUserDataLen {
		return core.BadRequest("user_data is %d bytes long: at most %d (base64) are allowed", len(ud), fsm.MaxUserDataLen)
	}
	raw, err := base64.StdEncoding.DecodeString(ud)
	if err != nil {
		return core.BadRequest("User data needs to be valid base 64.")
	}
	// Ironic takes the config drive's user data as a JSON string.
	if !utf8.Valid(raw) {
		return core.BadRequest("user_data must decode to text (a cloud-config or a script): Ironic builds the config drive from JSON, which cannot carry binary data")
	}
	return nil
}

// checkSecurityGroups refuses a boot into a security group that does not
// exist. Without a network service the one security group a server has is
// "default" (as its views show it), so any other name is Nova's 400 for a
// group Neutron does not find by name or id; an entry without a name is
// skipped, as Nova skips it.
func checkSecurityGroups(groups []securityGroup) error {
	for _, sg := range groups {
		if sg.Name == nil || *sg.Name == "" || *sg.Name == defaultSecurityGroup {
			continue
		}
		return core.BadRequest("Unable to find security_group with name or id '%s'", *sg.Name)
	}
	return nil
}
