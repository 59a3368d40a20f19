package ironic

import (
	"bytes"
	"encoding/json"
	"maps"
	"testing"
)

func TestParseCapabilities(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]string
	}{
		{"", map[string]string{}},
		{"boot_mode:uefi", map[string]string{"boot_mode": "uefi"}},
		{"boot_mode:uefi,has_gpu:true", map[string]string{"boot_mode": "uefi", "has_gpu": "true"}},
		{" boot_mode : uefi , has_gpu:true ", map[string]string{"boot_mode": "uefi", "has_gpu": "true"}},
		{"supports_uefi,has_gpu:true", map[string]string{"has_gpu": "true"}}, // no value: ignored, like Ironic
		{"a:b:c,d:e", map[string]string{"d": "e"}},                           // two colons: ignored
		{":x,y:,,z:1", map[string]string{"z": "1"}},                          // empty key or value: ignored
		{"k:1,k:2", map[string]string{"k": "2"}},                             // last wins
	} {
		got := ParseCapabilities(tc.in)
		if got == nil || !maps.Equal(got, tc.want) {
			t.Errorf("ParseCapabilities(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestNodeDocument(t *testing.T) {
	doc := `{"uuid": "u1", "name": null, "resource_class": "baremetal-gold", "provision_state": "active",
		"target_provision_state": null, "power_state": "power on", "target_power_state": null, "maintenance": true,
		"properties": {"cpus": 32, "memory_mb": 262144, "local_gb": 1e3, "ratio": 2.5, "big": 1e21, "cpu_arch": "x86_64",
			"hot": true, "gone": null, "list": [1, "a"], "capabilities": "boot_mode:uefi,has_gpu:true"},
		"traits": ["CUSTOM_B", "CUSTOM_A"], "instance_uuid": "i1", "allocation_uuid": "a1", "last_error": null,
		"instance_info": {"image_source": "http://x", "root_gb": 10, "capabilities": {"boot_mode": "uefi"}}}`
	var j nodeJSON
	dec := json.NewDecoder(bytes.NewReader([]byte(doc)))
	dec.UseNumber()
	if err := dec.Decode(&j); err != nil {
		t.Fatal(err)
	}
	n := j.node()
	wantProps := map[string]string{"cpus": "32", "memory_mb": "262144", "local_gb": "1000", "ratio": "2.5",
		"big": "1000000000000000000000", "cpu_arch": "x86_64", "hot": "true", "list": `[1,"a"]`,
		"capabilities": "boot_mode:uefi,has_gpu:true"}
	if !maps.Equal(n.Properties, wantProps) {
		t.Errorf("properties %v, want %v", n.Properties, wantProps)
	}
	if !maps.Equal(n.Capabilities, map[string]string{"boot_mode": "uefi", "has_gpu": "true"}) {
		t.Errorf("capabilities %v", n.Capabilities)
	}
	if n.UUID != "u1" || n.Name != "" || n.ResourceClass != "baremetal-gold" || n.ProvisionState != "active" ||
		n.PowerState != "power on" || !n.Maintenance || n.InstanceUUID != "i1" || n.AllocationUUID != "a1" ||
		n.Traits[0] != "CUSTOM_A" || n.InstanceInfo["root_gb"] != "10" ||
		n.InstanceInfo["capabilities"] != `{"boot_mode":"uefi"}` {
		t.Errorf("node %+v", n)
	}

	// Capabilities given as an object are taken as they are.
	j = nodeJSON{Properties: map[string]any{"capabilities": map[string]any{"boot_mode": "bios"}}}
	if n := j.node(); n.Capabilities["boot_mode"] != "bios" || n.Traits == nil {
		t.Errorf("object capabilities: %+v", n)
	}
}

func TestAllocationName(t *testing.T) {
	for in, want := range map[string]string{
		"3F2504E0-4F89-11D3-9A0C-0305E82C3301": "corral-3f2504e0-4f89-11d3-9a0c-0305e82c3301",
		"srv_1.a b":                            "corral-srv-1-a-b",
		"":                                     "corral",
		"x-":                                   "corral-x",
		"0123456789012345678901234567890123456789012345678901234567890123456789": "corral-01234567890123456789012345678901234567890123456789012345",
	} {
		got := AllocationName(in)
		if got != want || len(got) > 63 {
			t.Errorf("AllocationName(%q) = %q, want %q", in, got, want)
		}
	}
}
