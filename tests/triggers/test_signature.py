"""The webhook signature: HMAC-SHA256 of the raw body, hex, with the sha256= prefix."""

import hashlib
import hmac

from kaos.triggers.signature import signature, verify

SECRET = b"s3cret"
BODY = b'{"build": "failed"}'


def test_the_signature_is_the_hex_hmac_of_the_raw_body():
    assert signature(SECRET, BODY) == "sha256=" + hmac.new(SECRET, BODY, hashlib.sha256).hexdigest()


def test_a_good_signature_verifies_in_any_hex_case():
    good = signature(SECRET, BODY)
    assert verify(SECRET, BODY, good)
    assert verify(SECRET, BODY, "SHA256=" + good[7:].upper())
    assert verify(SECRET, BODY, f"  {good} ")


def test_anything_else_is_refused():
    good = signature(SECRET, BODY)
    assert not verify(SECRET, BODY, None)
    assert not verify(SECRET, BODY, "")
    assert not verify(SECRET, BODY + b" ", good)  # the raw body, byte for byte
    assert not verify(b"other", BODY, good)
    assert not verify(SECRET, BODY, good[7:])  # no prefix
    assert not verify(SECRET, BODY, "sha1=" + good[7:])
    assert not verify(SECRET, BODY, good[:-1])
    assert not verify(SECRET, BODY, "sha256=é" + good[8:])  # not ASCII: refused, no error
    assert not verify(b"", BODY, signature(b"", BODY))  # an empty key verifies nothing
