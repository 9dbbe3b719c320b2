"""kaos.operator.drift: which events are suspects, and what of helm's manifest an object lacks."""

from __future__ import annotations

from kaos.operator.drift import differences, drifted, suspect


def _written(*writes: tuple[str, str, str | None]) -> dict:
    return {"kind": "Service", "metadata": {"name": "agent-a", "managedFields": [
        {"manager": manager, "time": time, **({"subresource": sub} if sub else {})} for manager, time, sub in writes]}}


def test_a_deletion_is_a_suspect_and_helms_own_writes_are_not():
    assert suspect("DELETED", _written(("helm", "2026-01-01T00:00:01Z", None)))
    assert not suspect("MODIFIED", _written(("helm", "2026-01-01T00:00:01Z", None)))
    assert not suspect(None, _written(("kubectl-edit", "2026-01-01T00:00:01Z", None),
                                      ("helm", "2026-01-01T00:00:02Z", None)))


def test_a_hand_edit_is_a_suspect_even_within_helms_second_but_a_status_write_is_not():
    assert suspect("MODIFIED", _written(("helm", "2026-01-01T00:00:01Z", None),
                                        ("kubectl-patch", "2026-01-01T00:00:02Z", None)))
    assert suspect("MODIFIED", _written(("helm", "2026-01-01T00:00:01Z", None),
                                        ("kubectl-patch", "2026-01-01T00:00:01Z", None)))
    assert not suspect("MODIFIED", _written(("helm", "2026-01-01T00:00:01Z", None),
                                            ("traefik", "2026-01-01T00:00:09Z", "status")))


def test_what_the_api_server_adds_is_no_difference_but_a_changed_field_is():
    wanted = {"spec": {"ports": [{"port": 8000, "targetPort": "http"}], "type": "ClusterIP"}}
    live = {"spec": {"ports": [{"port": 8000, "targetPort": "http", "protocol": "TCP"}], "type": "ClusterIP",
                     "clusterIP": "10.0.0.1"}, "status": {}}
    assert differences(wanted, live) == []
    live["spec"]["ports"][0]["port"] = 9000
    assert differences(wanted, live) == [".spec.ports[0].port"]
    assert differences({"spec": {"rules": [{"a": 1}, {"b": 2}]}}, {"spec": {"rules": [{"a": 1}]}}) == [".spec.rules"]


def test_drifted_names_deleted_and_changed_objects_of_the_manifest_only():
    manifest = [{"kind": "Service", "metadata": {"name": "agent-a", "labels": {"x": "1"}}, "spec": {"type": "ClusterIP"}},
                {"kind": "HTTPRoute", "metadata": {"name": "agent-a"}, "spec": {"hostnames": ["a"]}}]
    seen = {("Service", "agent-a"): None,
            ("HTTPRoute", "agent-a"): {"kind": "HTTPRoute", "metadata": {"name": "agent-a", "uid": "u"},
                                       "spec": {"hostnames": ["b"]}},
            ("NetworkPolicy", "agent-a"): None}  # helm removed it: not in the manifest
    assert drifted(manifest, seen) == {("Service", "agent-a"): ["deleted"],
                                       ("HTTPRoute", "agent-a"): [".spec.hostnames[0]"]}
    unchanged = {("HTTPRoute", "agent-a"): {**manifest[1], "metadata": {"name": "agent-a", "resourceVersion": "9"}}}
    assert drifted(manifest, unchanged) == {}
