"""Readies a corral cluster for Tempest (scripts/tempest-run.sh).

Waits until the compute endpoint of Keystone's catalog answers with every
compute service up and the simulated nodes listed as hypervisors, then creates
(or finds again) what tempest.conf names: two bare-metal flavors of one
resource class and two public, active Glance images. Prints KEY=VALUE lines:
COMPUTE_URL, MAX_MICROVERSION, FLAVOR_REF, FLAVOR_REF_ALT, IMAGE_REF,
IMAGE_REF_ALT. Standard library only.

Environment: OS_AUTH_URL, OS_USERNAME, OS_PASSWORD, OS_PROJECT_NAME (the
Keystone admin), GLANCE_URL, TEMPEST_RESOURCE_CLASS, TEMPEST_MIN_HYPERVISORS,
TEMPEST_MIN_SERVICES, TEMPEST_READY_TIMEOUT (seconds).
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request

OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
ENV = os.environ


def log(msg):
    print("tempest-prepare: " + msg, file=sys.stderr, flush=True)


class HTTPError(Exception):
    def __init__(self, method, url, code, body):
        super().__init__("%s %s: HTTP %d %s" % (method, url, code, body[:300]))
        self.code = code


def call(method, url, body=None, token=None, headers=None, raw=None, timeout=30):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Accept", "application/json")
    if body is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("X-Auth-Token", token)
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with OPENER.open(req, timeout=timeout) as resp:
            text = resp.read()
            return resp.status, resp.headers, json.loads(text) if text.strip() else None
    except urllib.error.HTTPError as e:
        raise HTTPError(method, url, e.code, e.read().decode(errors="replace")) from None


def admin_login():
    auth = ENV["OS_AUTH_URL"].rstrip("/")
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": ENV["OS_USERNAME"], "domain": {"name": ENV.get("OS_USER_DOMAIN_NAME", "Default")},
        "password": ENV["OS_PASSWORD"]}}},
        "scope": {"project": {"name": ENV["OS_PROJECT_NAME"],
                              "domain": {"name": ENV.get("OS_PROJECT_DOMAIN_NAME", "Default")}}}}}
    _, headers, doc = call("POST", auth + "/auth/tokens", body)
    token = headers["X-Subject-Token"]
    region = ENV.get("OS_REGION_NAME", "RegionOne")
    urls = {}
    for svc in doc["token"].get("catalog", []):
        for ep in svc["endpoints"]:
            if ep["interface"] == "public" and ep.get("region_id", region) == region:
                urls.setdefault(svc["type"], ep["url"].rstrip("/"))
    if "compute" not in urls:
        raise SystemExit("Keystone's catalog has no public compute endpoint in %s: register corral's "
                         "(scripts/openstack-up.sh does, as CORRAL_COMPUTE_URL)" % region)
    return token, urls


def until(what, timeout, check):
    """Calls check() until it returns a true value or the timeout passes."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            v = check()
            if v:
                return v
        except (HTTPError, OSError, urllib.error.URLError, ValueError, KeyError) as e:
            last = e
        if time.monotonic() >= deadline:
            raise SystemExit("%s: not within %ds (last: %s)" % (what, timeout, last))
        time.sleep(0.5)


def main():
    token, urls = admin_login()
    compute = urls["compute"]
    glance = ENV.get("GLANCE_URL") or urls.get("image")
    if not glance:
        raise SystemExit("no Glance: GLANCE_URL is unset and the catalog has no image endpoint")
    glance = glance.rstrip("/")
    rc = ENV.get("TEMPEST_RESOURCE_CLASS", "baremetal")
    custom = "CUSTOM_" + "".join(ch if ch.isalnum() else "_" for ch in rc.upper())
    timeout = int(ENV.get("TEMPEST_READY_TIMEOUT", "90"))
    want_hv = int(ENV.get("TEMPEST_MIN_HYPERVISORS", "1"))
    want_svc = int(ENV.get("TEMPEST_MIN_SERVICES", "1"))

    def version():
        _, _, doc = call("GET", compute, token=token)
        return doc["version"]

    v = until("corral's compute API at %s" % compute, timeout, version)
    max_mv = v.get("version") or "2.1"
    log("compute API %s: microversions %s to %s" % (compute, v.get("min_version"), max_mv))

    def services_up():
        _, _, doc = call("GET", compute + "/os-services", token=token)
        up = [s for s in doc["services"] if s.get("state") == "up" and s.get("status") == "enabled"]
        return len(up) >= want_svc and up

    up = until("%d compute services up" % want_svc, timeout, services_up)
    log("compute services up: %s" % ", ".join(sorted(s["host"] for s in up)))

    def hypervisors():
        _, _, doc = call("GET", compute + "/os-hypervisors", token=token)
        return len(doc["hypervisors"]) >= want_hv and doc["hypervisors"]

    hv = until("%d hypervisors (Ironic nodes)" % want_hv, timeout, hypervisors)
    log("%d hypervisors" % len(hv))

    # Flavors: one resource class, the standard resources zeroed (as Nova's
    # Ironic driver wants them), the alternative one larger.
    flavors = {}
    _, _, doc = call("GET", compute + "/flavors/detail", token=token)
    have = {f["name"]: f["id"] for f in doc["flavors"]}
    for key, name, ram, vcpus, disk in (("FLAVOR_REF", "tempest-bm", 1024, 1, 10),
                                        ("FLAVOR_REF_ALT", "tempest-bm-alt", 2048, 2, 20)):
        fid = have.get(name)
        if fid is None:
            _, _, doc = call("POST", compute + "/flavors", {"flavor": {
                "name": name, "ram": ram, "vcpus": vcpus, "disk": disk}}, token=token)
            fid = doc["flavor"]["id"]
            log("created flavor %s (%s)" % (name, fid))
        call("POST", compute + "/flavors/%s/os-extra_specs" % fid, {"extra_specs": {
            "resources:" + custom: "1", "resources:VCPU": "0", "resources:MEMORY_MB": "0",
            "resources:DISK_GB": "0"}}, token=token)
        flavors[key] = fid

    # Images: public and active, so that every project Tempest creates may boot them.
    images = {}
    _, _, doc = call("GET", glance + "/v2/images?limit=100", token=token)
    have = {i["name"]: i for i in doc["images"]}
    for key, name in (("IMAGE_REF", "tempest-image"), ("IMAGE_REF_ALT", "tempest-image-alt")):
        img = have.get(name)
        if img is None:
            _, _, img = call("POST", glance + "/v2/images", {
                "name": name, "disk_format": "raw", "container_format": "bare",
                "visibility": "public"}, token=token)
            log("created image %s (%s)" % (name, img["id"]))
        if img["status"] != "active":
            call("PUT", glance + "/v2/images/%s/file" % img["id"], token=token,
                 headers={"Content-Type": "application/octet-stream"}, raw=b"\0" * 65536, timeout=120)
            until("image %s active" % name, 60, lambda: call(
                "GET", glance + "/v2/images/" + img["id"], token=token)[2]["status"] == "active")
        images[key] = img["id"]

    out = {"COMPUTE_URL": compute, "MAX_MICROVERSION": max_mv}
    out.update(flavors)
    out.update(images)
    for k, val in out.items():
        print("%s=%s" % (k, val))


if __name__ == "__main__":
    try:
        main()
    except HTTPError as e:
        raise SystemExit("tempest-prepare: %s" % e)
