"""Decode each case with hiredis (PyPI `hiredis`, the C parser redis-py uses)
and print one canonical JSON line per case, for tests/hiredis_diff.rs.

Input: a file with one case per line, the bytes in hex.
Output, per case: {"values": [...], "end": "ok" | "incomplete" | "error" |
"unhashable", "message": "..."} where each value is projected to what
hiredis keeps of it: {"str": hex} (simple, bulk, verbatim text, big
number), {"err": text}, {"int": "n"}, {"double": "nan" | hex of the IEEE
bits}, {"bool": b}, null, {"arr": [...]} (array, set), {"push": [...]},
{"map": [[k, v], ...]} (a Python dict: later duplicates replace values).
"""
import json
import struct
import sys

import hiredis

NOT_ENOUGH = object()
PROBE = b"+\x01probe\r\n"


def proj(x):
    if isinstance(x, bool):
        return {"bool": x}
    if isinstance(x, int):
        return {"int": str(x)}
    if isinstance(x, float):
        return {"double": "nan" if x != x else struct.pack(">d", x).hex()}
    if x is None:
        return None
    if isinstance(x, bytes):
        return {"str": x.hex()}
    if isinstance(x, hiredis.ReplyError):
        return {"err": str(x)}
    if isinstance(x, hiredis.PushNotification):
        return {"push": [proj(i) for i in x]}
    if isinstance(x, list):
        return {"arr": [proj(i) for i in x]}
    if isinstance(x, dict):
        return {"map": [[proj(k), proj(v)] for k, v in x.items()]}
    raise TypeError("unexpected %r" % type(x))


def run(data):
    r = hiredis.Reader(notEnoughData=NOT_ENOUGH)
    values = []
    try:
        r.feed(data)
        while True:
            v = r.gets()
            if v is NOT_ENOUGH:
                break
            values.append(proj(v))
        # hiredis does not say whether it holds half a reply; a probe value
        # comes back as itself only if it does not.
        try:
            r.feed(PROBE)
            v = r.gets()
            end = "ok" if (v == b"\x01probe" and not r.has_data()) else "incomplete"
        except Exception:
            # The probe broke the half reply hiredis was holding.
            end = "incomplete"
        return {"values": values, "end": end}
    except hiredis.ProtocolError as e:
        return {"values": values, "end": "error", "message": str(e)}
    except TypeError as e:
        return {"values": values, "end": "unhashable", "message": str(e)}


def main():
    with open(sys.argv[1]) as f:
        for line in f:
            print(json.dumps(run(bytes.fromhex(line.strip()))))


main()
