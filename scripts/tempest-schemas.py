#!/usr/bin/python3
"""Write Tempest's compute response schemas as JSON for corral's Go tests.

Tempest validates every compute response against a JSON schema chosen by the
microversion it asked for (tempest/lib/api_schema/response/compute and the
schema_versions_info table of each service client). This script reads those
tables and schemas from an installed Tempest and writes one JSON file per
client under api/testdata/tempest/, so that api's schema test
(api/views_schema_test.go) runs without Python.

Regenerate (Debian's tempest package):

    apt-get install -y tempest
    /usr/bin/python3 scripts/tempest-schemas.py

Each file is
    {"tempest": VERSION, "client": NAME,
     "schemas": {NAME: [{"min": "2.1", "max": "2.2", "schema": {...}}, ...]}}
where min and max bound the microversions (inclusive) a schema applies to
("" for no bound), as the client's schema_versions_info has them. Ranges
whose schemas are equal are merged. The schema keeps Tempest's
status_code and response_body.
"""

import importlib
import json
import os
import sys
from importlib import metadata

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "api", "testdata", "tempest")

SCHEMA = "tempest.lib.api_schema.response.compute."
CLIENT = "tempest.lib.services.compute."

# Per file: the client whose schema_versions_info picks the schema module,
# the schema names taken from that module, and the schemas a client method
# takes from a fixed module whatever the microversion.
FILES = {
    "servers": {
        "client": ("servers_client", "ServersClient"),
        # With the *_with_admin_pass schemas, which Tempest takes when
        # enable_instance_password is on (corral's default, as Nova's).
        "versioned": ["get_server", "list_servers", "list_servers_detail", "update_server",
                      "rebuild_server", "rebuild_server_with_admin_pass", "show_instance_action"],
        "fixed": {
            "list_instance_actions": "v2_1.servers",
            "create_server": "v2_1.servers",
            "create_server_with_admin_pass": "v2_1.servers",
            "delete_server": "v2_1.servers",
            "server_actions_common_schema": "v2_1.servers",
            "show_password": "v2_1.servers",
            "server_actions_delete_password": "v2_1.servers",
        },
    },
    "server_groups": {
        "client": ("server_groups_client", "ServerGroupsClient"),
        "versioned": ["create_show_server_group", "list_server_groups", "delete_server_group"],
    },
    "flavors": {
        "client": ("flavors_client", "FlavorsClient"),
        "versioned": ["list_flavors", "list_flavors_details", "create_update_get_flavor_details",
                      "delete_flavor"],
        "fixed": {
            "set_get_flavor_extra_specs": "v2_1.flavors_extra_specs",
            "set_get_flavor_extra_specs_key": "v2_1.flavors_extra_specs",
            "unset_flavor_extra_specs": "v2_1.flavors_extra_specs",
            "add_remove_list_flavor_access": "v2_1.flavors_access",
        },
    },
    "keypairs": {
        "client": ("keypairs_client", "KeyPairsClient"),
        "versioned": ["list_keypairs", "get_keypair", "create_keypair", "delete_keypair"],
    },
    "hypervisors": {
        "client": ("hypervisor_client", "HypervisorClient"),
        # Not get_hypervisor_uptime: Nova's Ironic driver cannot tell an
        # uptime and answers 501, as corral does.
        "versioned": ["list_search_hypervisors", "list_hypervisors_detail", "get_hypervisor",
                      "get_hypervisors_servers", "get_hypervisor_statistics"],
    },
    "tenant_usages": {
        "fixed": {
            "list_tenant_usage": "v2_1.tenant_usages",
            "get_tenant_usage": "v2_1.tenant_usages",
        },
    },
    "extensions": {
        "fixed": {
            "list_extensions": "v2_1.extensions",
        },
    },
    "services": {
        "client": ("services_client", "ServicesClient"),
        "versioned": ["list_services", "update_service"],
        "fixed": {
            "enable_disable_service": "v2_1.services",
            "disable_log_reason": "v2_1.services",
            "update_forced_down": "v2_11.services",
        },
    },
    "hosts": {
        # Not the power actions nor update_host: Nova's Ironic driver acts on
        # no host and answers 501, as corral does.
        "fixed": {
            "list_hosts": "v2_1.hosts",
            "get_host_detail": "v2_1.hosts",
        },
    },
    "limits": {
        "client": ("limits_client", "LimitsClient"),
        "versioned": ["get_limit"],
    },
    "quotas": {
        "client": ("quotas_client", "QuotasClient"),
        "versioned": ["get_quota_set", "get_quota_set_details", "update_quota_set", "delete_quota"],
    },
    "quota_classes": {
        "client": ("quota_classes_client", "QuotaClassesClient"),
        "versioned": ["get_quota_class_set", "update_quota_class_set"],
    },
    "availability_zones": {
        "fixed": {
            "list_availability_zone_list": "v2_1.availability_zone",
            "list_availability_zone_list_detail": "v2_1.availability_zone",
        },
    },
    "images": {
        # Nova's image proxy (to 2.35) and image metadata (to 2.38).
        "fixed": {
            "get_image": "v2_1.images",
            "list_images": "v2_1.images",
            "list_images_details": "v2_1.images",
            "delete": "v2_1.images",
            "image_metadata": "v2_1.images",
            "image_meta_item": "v2_1.images",
        },
    },
    "versions": {
        "fixed": {
            "list_versions": "v2_1.versions",
            "get_one_version": "v2_1.versions",
        },
    },
}


def keep(schema):
    out = {"status_code": schema["status_code"]}
    if "response_body" in schema:
        out["response_body"] = schema["response_body"]
    return out


def ranges(client, names):
    mod = importlib.import_module(CLIENT + client[0])
    info = getattr(mod, client[1]).schema_versions_info
    out = {n: [] for n in names}
    for row in info:
        for n in names:
            if not hasattr(row["schema"], n):
                continue
            s = keep(getattr(row["schema"], n))
            lo, hi = row["min"] or "", row["max"] or ""
            prev = out[n][-1] if out[n] else None
            if prev and prev["schema"] == s and prev["max"] and adjacent(prev["max"], lo):
                prev["max"] = hi
                continue
            out[n].append({"min": lo, "max": hi, "schema": s})
    return out


def adjacent(hi, lo):
    a, b = [int(x) for x in hi.split(".")], [int(x) for x in lo.split(".")]
    return a[0] == b[0] and a[1] + 1 == b[1]


def main():
    version = metadata.version("tempest")
    os.makedirs(OUT, exist_ok=True)
    for name, spec in FILES.items():
        schemas = {}
        if "client" in spec:
            schemas.update(ranges(spec["client"], spec["versioned"]))
        for n, module in spec.get("fixed", {}).items():
            mod = importlib.import_module(SCHEMA + module)
            schemas[n] = [{"min": "", "max": "", "schema": keep(getattr(mod, n))}]
        doc = {"tempest": version, "client": name, "schemas": schemas}
        path = os.path.join(OUT, name + ".json")
        with open(path, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
        print("wrote", os.path.relpath(path), file=sys.stderr)


if __name__ == "__main__":
    main()
