"""The run's message: {{ .body }} placeholders filled in without a template engine."""

import pytest

from kaos.triggers.message import MessageError, check, render


def test_the_whole_body_and_its_fields():
    body = b'{"repo": "kaos", "build": {"id": 42, "ok": false}, "tags": ["a", "b"], "none": null}'
    assert render("got {{ .body }}", body) == "got " + body.decode()
    assert render("{{.body.repo}} #{{ .body.build.id }} ok={{ .body.build.ok }}", body) == "kaos #42 ok=false"
    assert render("{{ .body.build }}", body) == '{"id": 42, "ok": false}'
    assert render("{{ .body.tags.1 }}", body) == "b"


def test_absent_fields_and_bodies_render_as_nothing():
    assert render("[{{ .body.missing.deeper }}]", b'{"a": 1}') == "[]"
    assert render("[{{ .body.none }}]", b'{"none": null}') == "[]"
    assert render("[{{ .body.a }}]", b"not json") == "[]"
    assert render("[{{ .body.tags.5 }}]", b'{"tags": []}') == "[]"
    assert render("nightly report [{{ .body }}]", None) == "nightly report []"


def test_a_payload_cannot_run_anything_or_inject_placeholders():
    body = b'{"x": "{{ .body }}", "y": "{{ __import__(\'os\') }}"}'
    assert render("{{ .body.x }}|{{ .body.y }}", body) == "{{ .body }}|{{ __import__('os') }}"
    assert render("{{ .body.__class__ }}", b'{"a": 1}') == ""  # keys only, no attributes


@pytest.mark.parametrize("template", ["{{ .Body }}", "{{ body }}", "{{ .body | upper }}", "{{ .body.a[0] }}",
                                      "{{ 7*7 }}", "{{ .env.SECRET }}"])
def test_other_placeholders_are_refused(template):
    with pytest.raises(MessageError, match="use {{ .body }} or {{ .body.field }}"):
        check(template)
    with pytest.raises(MessageError):
        render(template, b"{}")


def test_text_without_placeholders_is_kept():
    assert render("Write the nightly report. { not a placeholder }", None) == \
        "Write the nightly report. { not a placeholder }"
