"""The result channel from a sandboxed child to its worker: length-prefixed, HMAC-signed JSON frames.

The key is made by the worker per program and lives in the child only inside the sender; the frame layout is
``len(4, big-endian) | mac(32) | payload``, where the MAC is keyed BLAKE2b (RFC 7693's keyed mode, a MAC by design;
32-byte key and tag). Anything on the pipe that is not a valid frame (a program writing to a guessed descriptor)
marks the execution ``tampered``.

Why BLAKE2b and not HMAC-SHA256: the child signs its first frame on a copy-on-write image of the worker, and
OpenSSL's HMAC (provider lookup, context allocation) touched ~150 pages there, BLAKE2b (CPython's own ``_blake2``)
~50; every page is a copy-on-write fault, about 4 us each, per program.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import struct
import sys
from collections.abc import Callable
from typing import Any

_HEADER = struct.Struct(">I")
_MAC = 32


def sign(key: bytes, payload: bytes) -> bytes:
    """The frame's tag: keyed BLAKE2b-256 of the payload."""
    return hashlib.blake2b(payload, key=key, digest_size=_MAC).digest()


def make_sender(fd: int, key: bytes,
                trusted: frozenset[Any] | None = None) -> Callable[[dict[str, Any] | bytes], None]:
    """The child's signing sender. With ``trusted`` (code objects), a call from any other code (a program that found
    the sender through frames, globals or the garbage collector) sends a tamper alarm instead of its message."""

    def send(message: dict[str, Any] | bytes) -> None:
        """Sign and write one message: a dict (encoded as JSON here) or its JSON already encoded (the child's
        "ready", formatted without json's encoder, whose first use touches ~100 shared pages)."""
        if trusted is not None and sys._getframe(1).f_code not in trusted:
            message = {"type": "tamper", "why": "the result channel's sender was called by program code"}
        payload = message if isinstance(message, bytes) else json.dumps(message, default=str).encode()
        frame = _HEADER.pack(len(payload)) + sign(key, payload) + payload
        view = memoryview(frame)
        while view:
            written = os.write(fd, view)
            view = view[written:]

    return send


def parse_frames(data: bytes, key: bytes) -> tuple[list[dict[str, Any]], str | None]:
    """Decode every frame; returns the messages and, if the stream is not entirely valid frames, why."""
    messages: list[dict[str, Any]] = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < _HEADER.size + _MAC:
            return messages, "truncated frame on the result channel"
        (length,) = _HEADER.unpack_from(data, pos)
        start = pos + _HEADER.size + _MAC
        if start + length > len(data):
            return messages, "truncated frame on the result channel"
        mac, payload = data[pos + _HEADER.size:start], data[start:start + length]
        if not hmac.compare_digest(mac, sign(key, payload)):
            return messages, "unauthenticated bytes on the result channel"
        try:
            message = json.loads(payload)
        except ValueError:
            return messages, "malformed message on the result channel"
        if not isinstance(message, dict):
            return messages, "malformed message on the result channel"
        messages.append(message)
        pos = start + length
    return messages, None


# Worker <-> parent protocol: plain length-prefixed JSON over the worker's private pipes (trusted both ends).
def write_msg(fd: int, message: dict[str, Any]) -> None:
    write_frame(fd, json.dumps(message).encode())


def read_exact(fd: int, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> bytes | None:
    """One length-prefixed payload, undecoded (a worker forwards a program to its child without re-encoding it)."""
    header = read_exact(fd, _HEADER.size)
    if header is None:
        return None
    (length,) = _HEADER.unpack(header)
    return read_exact(fd, length)


def write_frame(fd: int, payload: bytes) -> None:
    data = memoryview(_HEADER.pack(len(payload)) + payload)
    while data:
        data = data[os.write(fd, data):]


def read_msg(fd: int) -> dict[str, Any] | None:
    payload = read_frame(fd)
    return None if payload is None else json.loads(payload)
