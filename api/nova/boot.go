package nova

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/corral-dev/corral/api/core"
	"github.com/corral-dev/corral/fsm"
	"github.com/corral-dev/corral/wire"
)

// The checks of a boot's body (POST /servers) beyond its JSON shape.

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

// parseNetworks reads a boot's networks: "auto", "none" or a list of
// wire.ServerNetwork.
func parseNetworks(raw json.RawMessage) ([]fsm.Network, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var word string
	if json.Unmarshal(raw, &word) == nil {
		if word == "auto" || word == "none" {
			return nil, nil
		}
		return nil, core.BadRequest(`networks %q must be "auto", "none" or a list of {"uuid": ...}`, word)
	}
	var list []wire.ServerNetwork
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&list); err != nil {
		return nil, core.BadRequest("networks must be a list of {\"uuid\": ..., \"port\": ..., \"fixed_ip\": ...}: %v", err)
	}
	out := make([]fsm.Network, 0, len(list))
	for _, n := range list {
		if n.UUID == "" && n.Port == "" {
			return nil, core.BadRequest("each network needs a uuid or a port")
		}
		out = append(out, fsm.Network{UUID: n.UUID, Port: n.Port, FixedIP: n.FixedIP})
	}
	return out, nil
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
