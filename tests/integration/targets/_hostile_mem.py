"""Memory helpers of the hostile target (targets/hostile.py and _hostile_tasks.py), and the
lists of what it corrupted: find a field by the address it holds, overwrite words, dress an
object up as a str. Runs on 2.7 and 3.6+.
"""
import ctypes
import gc
import struct
import sys

UNMAPPED = 0x10
HUGE = 1 << 40
FAKE_TEXT = b"INVENTED-NAME"

KEEP = []          # everything the corrupted objects refer to, alive for good
SKIPPED = []
ABSENT = []
CASES = []
TASKS = {}         # id -> {"name": expected, "case": ...}
THREADS = {}       # native id -> expected name
LOOP_TASKS = []


def _mappings():
    maps = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if parts[1].startswith("r"):
                maps.append((lo, hi))
    return maps


def readable_len(addr, n, maps=None):
    """How many of the N bytes at ADDR lie in readable mappings (from ADDR on)."""
    got = 0
    maps = maps or _mappings()
    while got < n:
        m = next(((lo, hi) for lo, hi in maps if lo <= addr + got < hi), None)
        if m is None:
            break
        got = min(n, m[1] - addr)
    return got


def word(addr):
    return ctypes.c_uint64.from_address(addr).value


def put(addr, value):
    ctypes.c_uint64.from_address(addr).value = value


def find_word(start, nbytes, value):
    """Offsets (from START, 8-aligned) of the words equal to VALUE in NBYTES readable bytes."""
    nbytes = readable_len(start, nbytes) & ~7
    raw = ctypes.string_at(start, nbytes)
    want = struct.pack("=Q", value)
    return [off for off in range(0, nbytes, 8) if raw[off:off + 8] == want]


def basicsize(obj):
    return type(obj).__basicsize__


def field_offset(obj, referent, what):
    """The offset of the one pointer field of OBJ's struct that holds REFERENT."""
    offs = find_word(id(obj), basicsize(obj), id(referent))
    if len(offs) != 1:
        raise LookupError("%s: %d candidate fields" % (what, len(offs)))
    return offs[0]


def instance_dict(obj, name):
    """OBJ's instance dict: its __dict__, or where the type does not show one (3.6's pure-Python
    Task, a subclass of the C Future) the dict among the objects it refers to that holds NAME."""
    d = getattr(obj, "__dict__", None)
    if d is not None:
        return d
    found = [r for r in gc.get_referents(obj) if type(r) is dict and name in r]
    if len(found) != 1:
        raise LookupError("%d instance dicts with %s" % (len(found), name))
    return found[0]


def attr_slot(obj, name, what):
    """The address of the word that holds OBJ's instance attribute NAME: in its dict's entries,
    in a split dict's values or in the values inline after the object (found by swapping in a
    probe object and reading the attribute back)."""
    d = instance_dict(obj, name)
    value = d[name]
    regions = [(id(obj), basicsize(obj) + 512)]
    for off in range(16, basicsize(d), 8):
        p = word(id(d) + off)
        if p > 1 << 32 and p % 8 == 0 and p != id(type(d)):
            regions.append((p, 4096))
    probe = object()
    KEEP.append(probe)
    for start, n in regions:
        for off in find_word(start, n, id(value)):
            put(start + off, id(probe))
            if d.get(name) is probe:
                # The slot now holds the probe without its reference: keep both for good.
                KEEP.append(value)
                return start + off
            put(start + off, id(value))
    raise LookupError("%s: attribute %s not found in memory" % (what, name))


def str_header():
    """The header bytes a real ASCII str has before its characters (state word and all)."""
    s = "".join(["Q", "WERTYUIOPASDFGHJ"])
    raw = ctypes.string_at(id(s), 128)
    data_off = raw.find(s.encode())
    if data_off < 0 or sys.getsizeof(s) != data_off + len(s) + 1:
        raise LookupError("str layout not understood")
    return raw[:data_off]


def dressed_bytes():
    """A bytes object whose memory reads as the ASCII str FAKE_TEXT: a str's header copied over
    the bytes' own from the length on (its size field set to the text's length)."""
    header = str_header()
    b = bytes(len(header) + len(FAKE_TEXT) + 8)
    base = bytes.__basicsize__ - 1
    if base > 16 + 8 + 4 + 8 or len(header) <= base:
        raise LookupError("bytes layout not understood")
    # Words 0 and 1 (refcount, type) stay the bytes'; the length is ours, the rest a str's.
    tail = header[base:] + FAKE_TEXT + b"\0" * 8
    ctypes.memmove(id(b) + base, tail, len(tail))
    put(id(b) + 16, len(FAKE_TEXT))
    ctypes.memmove(id(b) + 24, header[24:base], base - 24)
    KEEP.append(b)
    return b


def dressed_tuple():
    """2.7, where names are byte strings: a tuple whose memory reads as the str FAKE_TEXT (a
    str's hash and state words and the text over its items, its size field the text's length).
    Never touched again: the collector is off, and the process ends by os._exit()."""
    header = str_header()
    t = tuple([None] * 8)
    items = 24
    tail = header[items:] + FAKE_TEXT + b"\0" * 8
    if len(header) <= items or items + len(tail) > basicsize(t) + 8 * len(t):
        raise LookupError("tuple layout not understood")
    ctypes.memmove(id(t) + items, tail, len(tail))
    put(id(t) + 16, len(FAKE_TEXT))
    KEEP.append(t)
    return t


def dressed_object():
    """An object that is no str but whose memory reads as the str FAKE_TEXT."""
    return dressed_tuple() if sys.version_info < (3,) else dressed_bytes()


def skip(case, why):
    SKIPPED.append("%s: %s" % (case, why))


def absent(case, why):
    """CASE does not exist in this version: nothing to corrupt, not a failure to."""
    ABSENT.append("%s: %s" % (case, why))


def attempt(case, fn):
    try:
        fn()
        CASES.append(case)
    except (LookupError, AttributeError, ValueError) as e:
        skip(case, str(e))
