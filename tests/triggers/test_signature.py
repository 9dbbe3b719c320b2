"""The webhook signature: HMAC-SHA256 of "<timestamp>.<delivery>.<raw body>", hex, with the sha256= prefix."""

import hashlib
import hmac
import subprocess

from kaos.triggers.signature import signature, signed_headers, verify
from tests.triggers.builders import documented_call

SECRET = b"s3cret"
BODY = b'{"build": "failed"}'
TS, DELIVERY = "1772330400", "3f2a9c0d-81b4-4c1e-9d1a-0a1b2c3d4e5f"


def test_the_signature_is_the_hex_hmac_of_timestamp_delivery_and_body():
    expected = hmac.new(SECRET, f"{TS}.{DELIVERY}.".encode() + BODY, hashlib.sha256).hexdigest()
    assert signature(SECRET, TS, DELIVERY, BODY) == "sha256=" + expected


def test_a_good_signature_verifies_in_any_hex_case():
    good = signature(SECRET, TS, DELIVERY, BODY)
    assert verify(SECRET, TS, DELIVERY, BODY, good)
    assert verify(SECRET, TS, DELIVERY, BODY, "SHA256=" + good[7:].upper())
    assert verify(SECRET, TS, DELIVERY, BODY, f"  {good} ")


def test_a_captured_call_does_not_verify_with_another_delivery_id_time_or_body():
    good = signature(SECRET, TS, DELIVERY, BODY)
    assert not verify(SECRET, TS, "another-delivery", BODY, good)
    assert not verify(SECRET, TS, None, BODY, good)  # the delivery id is required
    assert not verify(SECRET, str(int(TS) + 1), DELIVERY, BODY, good)
    assert not verify(SECRET, None, DELIVERY, BODY, good)
    assert not verify(SECRET, TS, DELIVERY, BODY + b" ", good)  # the raw body, byte for byte
    old_format = "sha256=" + hmac.new(SECRET, BODY, hashlib.sha256).hexdigest()  # the body alone
    assert not verify(SECRET, TS, DELIVERY, BODY, old_format)


def test_the_signed_bytes_split_one_way_only():
    # With a '.' allowed in the delivery id, "a" + "b.c" and "a.b" + "c" would be signed alike.
    good = signature(SECRET, TS, "a", b"b.c")
    assert not verify(SECRET, TS, "a.b", b"c", good)
    assert not verify(SECRET, f"{TS}.a", "b", b"c", good)


def test_anything_else_is_refused():
    good = signature(SECRET, TS, DELIVERY, BODY)
    assert not verify(SECRET, TS, DELIVERY, BODY, None)
    assert not verify(SECRET, TS, DELIVERY, BODY, "")
    assert not verify(b"other", TS, DELIVERY, BODY, good)
    assert not verify(SECRET, TS, DELIVERY, BODY, good[7:])  # no prefix
    assert not verify(SECRET, TS, DELIVERY, BODY, "sha1=" + good[7:])
    assert not verify(SECRET, TS, DELIVERY, BODY, good[:-1])
    assert not verify(SECRET, TS, DELIVERY, BODY, "sha256=é" + good[8:])  # not ASCII: refused, no error
    assert not verify(b"", TS, DELIVERY, BODY, signature(b"", TS, DELIVERY, BODY))  # an empty key verifies nothing
    too_long = "d" * 129
    assert not verify(SECRET, TS, too_long, BODY, signature(SECRET, TS, too_long, BODY))


def test_signed_headers_are_the_three_headers_of_a_call():
    headers = signed_headers(SECRET, BODY, delivery=DELIVERY, timestamp=int(TS))
    assert headers == {"X-KAOS-Timestamp": TS, "X-KAOS-Delivery": DELIVERY,
                       "X-KAOS-Signature-256": signature(SECRET, TS, DELIVERY, BODY)}
    fresh = signed_headers(SECRET, BODY)
    assert verify(SECRET, fresh["X-KAOS-Timestamp"], fresh["X-KAOS-Delivery"], BODY, fresh["X-KAOS-Signature-256"])
    assert fresh["X-KAOS-Delivery"] != signed_headers(SECRET, BODY)["X-KAOS-Delivery"]


def test_the_documented_shell_line_signs_a_call_that_verifies():
    """docs/triggers.md's lines, run by bash with openssl as written, up to the curl call."""
    lines = documented_call().split("\ncurl ")[0]
    run = subprocess.run(["bash", "-c", lines + "\nprintf '%s\\n%s\\n%s\\n%s' \"$key\" \"$ts\" \"$id\" \"$sig\"\n"
                          + "printf '\\n'; printf '%s' \"$body\""],
                         capture_output=True, text=True, timeout=30, check=True)
    key, ts, delivery, sig, body = run.stdout.split("\n", 4)
    assert verify(key.encode(), ts, delivery, body.encode(), "sha256=" + sig)
    assert sig == signature(key.encode(), ts, delivery, body.encode())[7:]
