"""Write line-table test vectors for the interpreter running this script.

Usage: pythonX.Y gen_vectors.py OUTDIR    (writes OUTDIR/v3_Y.txt)

Compiles a fixed corpus (plus version-gated syntax), walks every code object through
co_consts, and records its first line, its raw line table and, for every offset, what the
interpreter itself says is there:
  3.11+   code.co_positions(), one result per code unit (None written as -1)
  3.10    the line PyCode_Addr2Line() gives for each byte offset (checked against co_lines())
  <=3.9   the line PyCode_Addr2Line() gives for each byte offset (checked against
          dis.findlinestarts())
It also decodes synthetic tables (code.replace with a random but well-formed table) the same
way, so that entry kinds the compiler rarely emits are covered too.

Output format, one record per line, fields separated by single spaces:
  format locations|v310|lnotab     first record; v310/lnotab offsets are bytes, locations
                                   offsets are code units (2 bytes)
  code NAME FIRSTLINENO NUNITS     starts a code object; offsets 0 .. NUNITS-1 follow
  table HEX                        the raw table ("-" when empty)
  at COUNT LINE [ENDLINE COL ENDCOL]   the next COUNT offsets all decode to this
  end                              the "at" runs covered NUNITS offsets; for locations and
                                   v310 the table ends exactly at NUNITS
Lines starting with '#' are comments.

Runs on Python 2.7 and 3.6 on (its own syntax is theirs): before 3.8 the corpus leaves out what
those versions cannot compile (MISC_OLD), and synthetic tables go on a code object made with
types.CodeType, as code.replace() is 3.8+. 2.7's co_lnotab has unsigned line increments
(format lnotab-unsigned).
"""
import binascii
import ctypes
import dis
import os
import sys
import types

VERSION = sys.version_info[:2]
if VERSION >= (3, 11):
    FORMAT = "locations"
elif VERSION == (3, 10):
    FORMAT = "v310"
elif VERSION >= (3, 6):
    FORMAT = "lnotab"
else:
    FORMAT = "lnotab-unsigned"

MISC = '''
import os
x = 1
y = [i * 2 for i in range(10) if i % 3]
z = {k: v for k, v in zip("abc", range(3))}
s = {a for a in y}
g = (q for q in y)
f = lambda a, b=2, *c, **d: (a, b, c, d)

def outer(a, b):
    def inner(c):
        nonlocal a
        a += c
        return a
    return inner(b)

class K(object):
    attr = 3
    def method(self, v):
        try:
            r = self.attr / v
        except ZeroDivisionError as e:
            r = None
        except (TypeError, ValueError):
            raise
        else:
            r += 1
        finally:
            self.done = True
        return r
    @staticmethod
    def st(*args):
        return sum(args)
    @property
    def prop(self):
        return self.attr

def gen(n):
    for i in range(n):
        if i % 2:
            yield i
        elif i > 10:
            break
        else:
            continue
    yield from range(3)

def withs(path):
    with open(path) as fh, open(path) as fh2:
        data = fh.read()
    assert data, "empty"
    del data
    global x
    x = x if x else -x
    return fh2

def chained(a, b, c):
    while a < b <= c:
        a += 1
        if a == 5: break
    else:
        a = -1
    t = a, *[b, c]
    u = t[1:2], t[::2], t[-1]
    v = f"{a!r:>10} and {b + c} {'nested'}"
    if (w := a + 1) > 3:
        return w
    return u, v

def nested_comprehensions(rows):
    return [[c * r for c in row if c] for r, row in enumerate(rows)
            if any(x > 0 for x in row)]

def raises(a):
    try:
        try:
            return 1 / a
        finally:
            print("inner")
    except Exception as exc:
        raise RuntimeError("wrapped") from exc
'''

def misc_old():
    """MISC without what 3.7 and older cannot compile (and 2.7 cannot: nonlocal, yield from,
    starred items, f-strings, raise from), each construct replaced by a plain one."""
    edits = [
        ("        nonlocal a\n", ""),
        ("    yield from range(3)\n", "    for q in range(3):\n        yield q\n"),
        ("    t = a, *[b, c]\n", "    t = (a,) + tuple([b, c])\n"),
        ("    v = f\"{a!r:>10} and {b + c} {'nested'}\"\n",
         "    v = '%10r and %s %s' % (a, b + c, 'nested')\n"),
        ("    if (w := a + 1) > 3:\n", "    w = a + 1\n    if w > 3:\n"),
        ("raise RuntimeError(\"wrapped\") from exc", "raise RuntimeError(\"wrapped\")"),
    ]
    out = MISC
    for old, new in edits:
        if old not in out:
            raise SystemExit("misc_old: %r is not in MISC" % old)
        out = out.replace(old, new)
    return out


ASYNC = '''
async def agen(n):
    for i in range(n):
        yield i

async def coro(session, urls):
    async with session as s:
        results = [await s.get(u) async for u in agen(3)]
        async for item in agen(5):
            await item
    try:
        await s.close()
    except Exception:
        pass
    return results
'''

MULTILINE = '''
def multi(a, b,
          c, d):
    result = call(
        a,
        b + c,
        [d,
         a],
        key=lambda item: (
            item.x
            + item.y),
    )
    value = (a
             + b
             * c
             - d)
    obj.attr.method(
        1)[
        2].other(
        3)
    return {
        "k": a,
        "j": [
            x for x in b
            if x
        ],
    }
'''

MATCH = '''
def m(cmd):
    match cmd:
        case [x, y, *rest]:
            return x
        case {"k": v, **kw}:
            return v
        case Point(x=0, y=yy) if yy > 0:
            return yy
        case str() | bytes():
            return None
        case _:
            return -1
'''

EXCEPT_STAR = '''
def es():
    try:
        raise ExceptionGroup("g", [ValueError(1)])
    except* ValueError as e:
        pass
    except* TypeError:
        raise
'''

TYPE_PARAMS = '''
type Alias[T] = list[T]
def ident[T: int](x: T) -> T:
    return x
class Box[T]:
    def get(self) -> T:
        return self.v
'''

EVAL = 'lambda a: (\n    a +\n    1)'


def blank(n):
    return "\n" * n


def big_jumps():
    # Gaps of more than 127 and 255 lines inside expressions and between statements, both
    # directions (a call goes back to its first line, a loop back to its header).
    return (
        "def jumps(a):\n"
        "    x = (a +" + blank(130) + "         a)\n"
        "    y = call(a," + blank(300) + "             a)\n"
        "    z = call(" + blank(1000) + "        a)\n" + blank(2000) +
        "    for i in range(a):" + blank(500) + "        a += i\n"
        "    w = a" + blank(70000) + "    v = w\n"
        "    u = (v," + blank(140000) + "         w)\n"
        "    return x, y, z, w, u\n"
    )


def far_lines():
    # Everything beyond line 10000, and a function that starts beyond line 65535.
    return (blank(12000) + "def far(a):\n    b = a\n" + blank(20) + "    return b\n" +
            blank(60000) + "def farther(a):\n    return [a\n" + blank(400) + "  for _ in a]\n")


def long_lines():
    # Columns past 127, 255, 4095 and 262143 (one- to four-chunk varints in 3.11+).
    terms = " + ".join(["a"] * 200)
    return (
        "def longline(a):\n"
        "    x = " + terms + "\n"
        "    y = '" + "p" * 5000 + "' + str(a) + call(a)\n"
        "    z = '" + "q" * 300000 + "' + str(a)\n"
        "    return (x, y, z, [i for i in a if i], lambda q: q + '" + "r" * 200 + "')\n"
    )


class Lcg(object):
    """A tiny deterministic generator, the same under every interpreter version."""

    def __init__(self, seed):
        self.state = seed

    def next(self, n):
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        return (self.state >> 33) % n

    def pick(self, seq):
        return seq[self.next(len(seq))]


def long_function(nstmt):
    rnd = Lcg(1234)
    out = ["def long_function(a, b, obj):"]
    forms = [
        "    a = b + {n}",
        "    b = obj.attr{n}(a, b)",
        "    if a > {n}:\n        b -= 1",
        "    for i in range({n}):\n        a += i",
        "    c{n} = [a, b,\n        {n}]",
        "    # comment {n}",
        "    obj.x = obj.y = {n}",
        "    while b < {n}:\n        b += 2\n        if b: break",
        "    try:\n        a = a // b\n    except ZeroDivisionError:\n        a = {n}",
    ]
    for n in range(nstmt):
        out.append(rnd.pick(forms).format(n=n))
        out.append("\n" * rnd.next(3))
    out.append("    return a, b")
    return "\n".join(out) + "\n"


def corpus():
    items = [
        ("misc", MISC if VERSION >= (3, 8) else misc_old(), "exec"),
        ("multiline", MULTILINE, "exec"),
        ("eval", EVAL, "eval"),
        ("jumps", big_jumps(), "exec"),
        ("far", far_lines(), "exec"),
        ("longline", long_lines(), "exec"),
        ("longfunc", long_function(300), "exec"),
    ]
    if VERSION >= (3, 6):
        items.insert(1, ("async", ASYNC, "exec"))
    if VERSION >= (3, 10):
        items.append(("match", MATCH, "exec"))
    if VERSION >= (3, 11):
        items.append(("exceptstar", EXCEPT_STAR, "exec"))
    if VERSION >= (3, 12):
        items.append(("typeparams", TYPE_PARAMS, "exec"))
    return items


def walk(code, prefix, seen):
    yield prefix + ":" + getattr(code, "co_qualname", code.co_name), code
    for const in code.co_consts:
        if isinstance(const, type(code)) and id(const) not in seen:
            seen.add(id(const))
            for item in walk(const, prefix, seen):
                yield item


addr2line = ctypes.pythonapi.PyCode_Addr2Line
addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
addr2line.restype = ctypes.c_int


def raw_table(code):
    if FORMAT.startswith("lnotab"):
        return code.co_lnotab
    return code.co_linetable


def expected_locations(code):
    nunits = len(code.co_code) // 2
    positions = list(code.co_positions())
    if len(positions) != nunits:
        raise SystemExit("co_positions covers %d units, co_code has %d" %
                         (len(positions), nunits))
    out = []
    for i, pos in enumerate(positions):
        pos = tuple(-1 if v is None else v for v in pos)
        if addr2line(code, 2 * i) != pos[0]:
            raise SystemExit("PyCode_Addr2Line disagrees with co_positions at %d" % i)
        out.append(pos)
    return out


def lines_from_co_lines(code):
    table = {}
    for start, end, line in code.co_lines():
        for off in range(start, end):
            table[off] = -1 if line is None else line
    return table


def lines_from_linestarts(code):
    starts = list(dis.findlinestarts(code))
    table = {}
    for off in range(len(code.co_code)):
        line = code.co_firstlineno
        for start, start_line in starts:
            if start <= off:
                line = start_line
        table[off] = line
    return table


def expected_lines(code, check):
    nbytes = len(code.co_code)
    out = [(addr2line(code, off),) for off in range(nbytes)]
    if check:
        other = lines_from_co_lines(code) if FORMAT == "v310" else lines_from_linestarts(code)
        for off in range(nbytes):
            if other.get(off) != out[off][0]:
                raise SystemExit("oracles disagree at byte %d: %r vs %r" %
                                 (off, other.get(off), out[off][0]))
    return out


def expected(code, check=True):
    if FORMAT == "locations":
        return expected_locations(code)
    return expected_lines(code, check)


def write_code(fh, name, code, check=True):
    results = expected(code, check)
    table = raw_table(code)
    fh.write("code %s %d %d\n" % (name.replace(" ", "_"), code.co_firstlineno, len(results)))
    fh.write("table %s\n" % (binascii.hexlify(table).decode("ascii") if table else "-"))
    i = 0
    while i < len(results):
        j = i
        while j < len(results) and results[j] == results[i]:
            j += 1
        fh.write("at %d %s\n" % (j - i, " ".join(str(v) for v in results[i])))
        i = j
    fh.write("end\n")


def varint(value):
    out = bytearray()
    while value >= 64:
        out.append(0x40 | (value & 63))
        value >>= 6
    out.append(value)
    return out


def svarint(value):
    return varint((-value) << 1 | 1 if value < 0 else value << 1)


def synth_delta(rnd):
    return rnd.pick([0, 1, -1, 2, -3, 60, -200, 300, 5000, -70000, 140000])


def synth_location_entry(rnd, length):
    kind = rnd.next(5)
    head = 0x80 | (length - 1)
    if kind == 0:
        return bytearray([head | rnd.next(10) << 3, rnd.next(128)])
    if kind == 1:
        return bytearray([head | (10 + rnd.next(3)) << 3, rnd.next(128), rnd.next(128)])
    if kind == 2:
        return bytearray([head | 13 << 3]) + svarint(synth_delta(rnd))
    if kind == 3:
        cols = [0, 1, 63, 64, 4095, 4096, 262145]
        return (bytearray([head | 14 << 3]) + svarint(synth_delta(rnd)) +
                varint(rnd.pick([0, 1, 3, 200, 5000])) + varint(rnd.pick(cols)) +
                varint(rnd.pick(cols)))
    return bytearray([head | 15 << 3])


def synth_locations(rnd, nunits):
    table = bytearray()
    while nunits > 0:
        length = min(nunits, 1 + rnd.next(8))
        table += synth_location_entry(rnd, length)
        nunits -= length
    return bytes(table)


def synth_v310(rnd, nbytes):
    table = bytearray()
    while nbytes > 0:
        sdelta = min(nbytes, rnd.pick([0, 2, 2, 4, 6, 10, 30, 254, 255]))
        ldelta = rnd.pick([0, 1, -1, 3, 127, -127, -128, -128, 50])
        table += bytearray([sdelta, ldelta & 0xFF])
        nbytes -= sdelta
    return bytes(table)


def synth_lnotab(rnd, nbytes):
    table = bytearray()
    lines = [0, 1, 2, -1, -5, 127, -128, 100]
    if FORMAT == "lnotab-unsigned":
        lines = [0, 1, 2, 5, 127, 128, 200, 255]
    for _ in range(nbytes // 4):
        addr = rnd.pick([0, 0, 2, 4, 8, 20, 255])
        line = rnd.pick(lines)
        table += bytearray([addr, line & 0xFF])
    return bytes(table)


def with_lnotab(code, table, first):
    """CODE with line table TABLE and first line FIRST (code.replace() is 3.8+)."""
    args = [code.co_argcount]
    if VERSION >= (3, 0):
        args.append(code.co_kwonlyargcount)
    args += [code.co_nlocals, code.co_stacksize, code.co_flags, code.co_code, code.co_consts,
             code.co_names, code.co_varnames, code.co_filename, code.co_name, first, table,
             code.co_freevars, code.co_cellvars]
    return types.CodeType(*args)


def synthetic(fh, base):
    # Tables the compiler did not write, decoded by the interpreter itself.
    for seed in range(12):
        rnd = Lcg(seed + 1)
        first = rnd.pick([1, 1000, 500000])
        if FORMAT == "locations":
            table = synth_locations(rnd, len(base.co_code) // 2)
            code = base.replace(co_linetable=table, co_firstlineno=first)
        elif FORMAT == "v310":
            table = synth_v310(rnd, len(base.co_code))
            code = base.replace(co_linetable=table, co_firstlineno=first)
        elif VERSION >= (3, 8):
            table = synth_lnotab(rnd, len(base.co_code))
            code = base.replace(co_lnotab=table, co_firstlineno=first)
        else:
            code = with_lnotab(base, synth_lnotab(rnd, len(base.co_code)), first)
        write_code(fh, "synthetic:%d" % seed, code, check=False)


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(outdir, "v%d_%d.txt" % VERSION)
    count = 0
    with open(path, "w") as fh:
        fh.write("# pytop linetable vectors from Python %s; generated by gen_vectors.py, "
                 "do not edit\n" % sys.version.split()[0])
        fh.write("format %s\n" % FORMAT)
        base = None
        for label, source, mode in corpus():
            top = compile(source, "<%s>" % label, mode)
            for name, code in walk(top, label, set()):
                write_code(fh, name, code)
                count += 1
                if name == "misc:chained":
                    base = code
        synthetic(fh, base)
    print("%s: %d code objects + 12 synthetic" % (path, count))


if __name__ == "__main__":
    main()
