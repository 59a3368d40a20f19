"""Diagnostic mode of scripts/tempest-run.sh (TEMPEST_SCHEMA_LENIENT=1).

Tempest checks every response body against Nova's schema for the
microversion it asked for, and a class whose setUpClass meets one bad body
runs none of its tests. For diagnosis only, this records every violation of
a response (all of them, not just the first) in $TEMPEST_SCHEMA_LOG (JSON
lines: test, client call, microversion, URL, errors) and lets the test go
on, so that one run shows both every schema violation and the failures the
first violation hid. Never used in CI: a lenient run proves nothing about
the views.

Python imports sitecustomize at start-up from the first directory of
sys.path holding one; the script puts this directory first in PYTHONPATH,
so every Tempest worker loads it.
"""

import inspect
import json
import os
import re

LOG = os.environ.get("TEMPEST_SCHEMA_LOG")
TEST_FRAME = re.compile(r"^(test_|setUp|tearDown|resource_setup|resource_cleanup)")


def _test_caller(frame):
    """module.Class:method of the test code that made the call (a class's setup for all its tests)."""
    while frame is not None:
        name = frame.f_code.co_name
        if TEST_FRAME.search(name):
            owner = frame.f_locals.get("self")
            cls = type(owner) if owner is not None else frame.f_locals.get("cls")
            if isinstance(cls, type):
                return "%s.%s:%s" % (cls.__module__, cls.__name__, name)
        frame = frame.f_back
    return None


def _install():
    import jsonschema
    from tempest.lib.common import rest_client
    from tempest.lib.common.utils import test_utils
    from tempest.lib import exceptions
    from tempest.lib.services.compute import base_compute_client

    original = rest_client.RestClient.validate_response.__func__

    def validate_response(cls, schema, resp, body):
        try:
            return original(cls, schema, resp, body)
        except exceptions.InvalidHTTPResponseBody:
            caller = inspect.currentframe().f_back
            client = caller.f_locals.get("self")
            body_schema = schema.get("response_body") or {}
            validator = rest_client.JSONSCHEMA_VALIDATOR(body_schema, format_checker=rest_client.FORMAT_CHECKER)
            errors = sorted({"%s: %s" % ("/".join(str(p) for p in e.absolute_path) or "(body)", e.message)
                             for e in validator.iter_errors(body)})
            if not body_schema and body:
                errors = ["(body): Nova answers no body here"]
            entry = {
                "test": _test_caller(caller) or test_utils.find_test_caller(),
                "call": "%s.%s" % (type(client).__name__ if client is not None else cls.__name__,
                                   caller.f_code.co_name),
                "microversion": base_compute_client.COMPUTE_MICROVERSION or "2.1",
                "url": resp.get("content-location") if hasattr(resp, "get") else None,
                "status": getattr(resp, "status", None),
                "errors": errors,
            }
            with open(LOG, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry, sort_keys=True) + "\n")
            return None

    rest_client.RestClient.validate_response = classmethod(validate_response)
    del jsonschema


if LOG:
    try:
        _install()
    except ImportError:
        pass
