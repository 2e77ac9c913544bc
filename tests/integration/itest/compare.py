"""Frames and their diffs; pytop against the target's own view and against _remote_debugging;
text dumps against the JSON and against profiling.sampling dump."""
import os
import re

from .harness import Problem, q


# ---------------------------------------------------------------- frames and diffs

COLUMN_FIELDS = ("end_line", "col", "end_col")


def fmt_frame(f, full=False):
    if f is None:
        return "-"
    path = f.get("file")
    if not full and isinstance(path, str):
        path = os.path.basename(path)
    loc = "%s:%s" % (path, f.get("line"))
    if any(f.get(k) is not None for k in COLUMN_FIELDS):
        loc += ":%s-%s:%s" % (f.get("col"), f.get("end_line"), f.get("end_col"))
    name = f.get("function")
    if f.get("name") is not None and f.get("name") != name and not str(name).endswith(
            "." + str(f.get("name"))):
        name = "%s (name %s)" % (name, f.get("name"))
    return "%s  %s" % (name, loc)


def frame_diff(expected, got, fields, expect_label, got_label, context=3):
    """Index and lines of the first frame where EXPECTED and GOT differ in FIELDS; None if same.

    Frames are dicts listed innermost first; the lines show the two stacks side by side around
    the first difference, then both frames of that position in full.
    """
    first = None
    for i in range(max(len(expected), len(got))):
        e = expected[i] if i < len(expected) else None
        g = got[i] if i < len(got) else None
        if e is None or g is None or any(e.get(k) != g.get(k) for k in fields):
            first = i
            break
    if first is None:
        return None
    e = expected[first] if first < len(expected) else None
    g = got[first] if first < len(got) else None
    if e is None or g is None:
        what = "%d frames expected, %d got" % (len(expected), len(got))
    else:
        what = ", ".join("%s %r != %r" % (k, e.get(k), g.get(k)) for k in fields
                         if e.get(k) != g.get(k))
    lines = ["frame #%d (0 = innermost): %s" % (first, what)]
    lo = max(0, first - context)
    hi = min(max(len(expected), len(got)), first + context + 1)
    width = 56
    lines.append("      %-*s | %s" % (width, expect_label, got_label))
    if lo > 0:
        lines.append("      %-*s | ..." % (width, "... %d frames" % lo))
    for i in range(lo, hi):
        a = fmt_frame(expected[i]) if i < len(expected) else "-"
        b = fmt_frame(got[i]) if i < len(got) else "-"
        mark = ">" if i == first else " "
        lines.append(" %s%3d %-*s | %s" % (mark, i, width, a[:width], b))
    rest = max(len(expected), len(got)) - hi
    if rest > 0:
        lines.append("      %-*s | ..." % (width, "... %d more frames" % rest))
    lines.append("     %s: %s" % (expect_label, fmt_frame(e, full=True)))
    lines.append("     %s: %s" % (got_label, fmt_frame(g, full=True)))
    return first, lines


def python_frames(thread):
    """pytop's Python frames of a thread (synthetic native/gc frames left out)."""
    return [f for f in thread.get("frames") or [] if f.get("kind") in (None, "python")]


def thread_set_problem(what, want, got, names):
    """A Problem if the tid sets WANT and GOT differ; NAMES maps tid to thread name."""
    missing = sorted(set(want) - set(got), key=str)
    extra = sorted(set(got) - set(want), key=str)
    if not missing and not extra:
        return None
    details = []
    if missing:
        details.append("missing: " + ", ".join("%s %s" % (t, q(names.get(t))) for t in missing))
    if extra:
        details.append("unexpected: " + ", ".join("%s %s" % (t, q(names.get(t))) for t in extra))
    return Problem("%s: threads differ (%d missing, %d unexpected)" % (what, len(missing),
                                                                       len(extra)), details)


def thread_label(tid, name, interp_id):
    label = "thread %s %s" % (tid, q(name))
    if interp_id not in (None, 0):
        label += " (interpreter %s)" % interp_id
    return label


# ---------------------------------------------------------------- (a) pytop vs the target

def with_instr(snap):
    """SNAP (pytop --dump --json --opcodes) with each frame's instruction as the target reports
    its own ("instr": [offset, name], or None)."""
    for _, t in all_threads(snap):
        for f in t.get("frames") or []:
            i = f.get("instruction")
            f["instr"] = [i.get("offset"), i.get("name")] if i else None
    return snap


def compare_self_report(expect, snap, version, extra_fields=(), columns=True):
    """Problems between the target's own view (EXPECT) and pytop's JSON (SNAP); EXTRA_FIELDS
    are compared in every frame as well, and (3.11+) the columns unless not COLUMNS (a
    recording keeps lines only)."""
    problems = []
    if snap.get("pid") != expect["pid"]:
        problems.append(Problem("pid %r, expected %r" % (snap.get("pid"), expect["pid"])))
    py = snap.get("python") or {}
    want_version = "%d.%d.%d" % tuple(expect["version"])
    if not str(py.get("version")).startswith(want_version):
        problems.append(Problem("python.version %r, expected %s" % (py.get("version"),
                                                                     want_version)))
    if py.get("hexversion") != expect["hexversion"]:
        problems.append(Problem("python.hexversion %r, expected %r" % (py.get("hexversion"),
                                                                        expect["hexversion"])))
    if py.get("debug_build") not in (None, expect["debug_build"]):
        problems.append(Problem("python.debug_build %r, expected %r" % (py.get("debug_build"),
                                                                         expect["debug_build"])))
    got_interps = {i.get("id"): i for i in snap.get("interpreters") or []}
    want_interps = {i["id"]: i for i in expect["interpreters"]}
    if sorted(got_interps, key=str) != sorted(want_interps, key=str):
        problems.append(Problem("interpreters %s, expected %s" % (
            sorted(got_interps, key=str), sorted(want_interps))))
    fields = ["function", "name", "file", "line"] + list(extra_fields)
    if version >= (3, 11) and columns:
        fields += COLUMN_FIELDS
    for interp_id, want_interp in sorted(want_interps.items()):
        got_interp = got_interps.get(interp_id)
        if got_interp is None:
            continue
        got_threads = {t.get("tid"): t for t in got_interp.get("threads") or []}
        want_threads = {t["native_id"]: t for t in want_interp["threads"]}
        names = {tid: t.get("name") for tid, t in got_threads.items()}
        names.update((tid, t["name"]) for tid, t in want_threads.items())
        p = thread_set_problem("interpreter %s" % interp_id, want_threads, got_threads, names)
        if p is not None:
            problems.append(p)
        for tid in sorted(set(want_threads) & set(got_threads)):
            want = want_threads[tid]
            got = got_threads[tid]
            label = thread_label(tid, want["name"], interp_id)
            checks = [("thread_id", got.get("thread_id"), want["ident"]),
                      ("name", got.get("name"), want["name"]),
                      ("main", got.get("main"), want["is_main"])]
            if want.get("has_exception") is not None:
                checks.append(("has_exception", got.get("has_exception"), want["has_exception"]))
            for field, g, w in checks:
                if g != w:
                    problems.append(Problem("%s: %s %r, expected %r" % (label, field, g, w)))
            frames = python_frames(got)
            if version < (3, 11):
                for i, f in enumerate(frames):
                    set_fields = [k for k in COLUMN_FIELDS if f.get(k) is not None]
                    if set_fields:
                        problems.append(Problem(
                            "%s: frame #%d has %s before 3.11 (must be null)"
                            % (label, i, ", ".join(set_fields)), [fmt_frame(f, full=True)]))
                        break
            diff = frame_diff(want["frames"], frames, fields, "target (sys._current_frames)",
                              "pytop --json")
            if diff is not None:
                problems.append(Problem("%s: %s" % (label, diff[1][0]), diff[1][1:]))
    return problems


# ---------------------------------------------------------------- (b) pytop vs _remote_debugging

def remote_frames_as_pytop(frames):
    return [{"function": f["funcname"], "file": f["filename"], "line": f["lineno"],
             "end_line": f["end_lineno"], "col": f["col_offset"], "end_col": f["end_col_offset"]}
            for f in frames]


def accept_non_ascii(want_frames, got_frames):
    """3.14's unwinder reads a non-ASCII str as if it were ASCII (NULs, cut-off text: 'grüße'
    comes back as '\\x00' * 5), so a non-ASCII function or file is taken from pytop as is.
    Returns how many values were taken so."""
    taken = 0
    for want, got in zip(want_frames, got_frames):
        for field in ("function", "file"):
            value = got.get(field)
            if isinstance(value, str) and not value.isascii() and want.get(field) != value:
                want[field] = value
                taken += 1
    return taken


def is_init_shim(frame):
    """Whether FRAME ({function, file, line}) is the interpreter's __init__ cleanup shim
    (3.13+, _Py_InitCleanup: function and file "__init__", no line). CPython's remote unwinder
    and profiling.sampling dump list it; Python's own views of a stack and pytop do not."""
    return (frame.get("function") == "__init__" and frame.get("line") in (None, 0)
            and os.path.basename(frame.get("file") or "") == "__init__")


def drop_init_shims(frames, notes, who):
    kept = [f for f in frames if not is_init_shim(f)]
    if len(kept) != len(frames):
        notes.append("%s lists the __init__ cleanup shim: %d such frame(s) not compared"
                     % (who, len(frames) - len(kept)))
    return kept


def compare_remote(remote, snap, version, notes):
    """Problems between CPython's remote unwinder (REMOTE, from remote_unwind.py) and pytop."""
    problems = []
    got_interps = {i.get("id"): i for i in snap.get("interpreters") or []}
    bits = remote.get("status_bits") or {}
    pairs = []
    if remote["grouped"]:
        want_ids = sorted(i["id"] for i in remote["interpreters"])
        if sorted(got_interps, key=str) != want_ids:
            problems.append(Problem("interpreters %s, _remote_debugging has %s"
                                    % (sorted(got_interps, key=str), want_ids)))
        pairs = [(i, got_interps[i["id"]]) for i in remote["interpreters"]
                 if i["id"] in got_interps]
    else:
        # 3.14: one flat list, from the most recently created interpreter only; find ours.
        want = remote["interpreters"][0]
        tids = sorted(t["tid"] for t in want["threads"])
        match = [i for i in got_interps.values()
                 if sorted(t.get("tid") for t in i.get("threads") or []) == tids]
        if not match:
            problems.append(Problem("no pytop interpreter has the threads _remote_debugging "
                                    "lists (%s)" % ", ".join(map(str, tids))))
        else:
            pairs = [(want, match[0])]
            if len(got_interps) > 1:
                notes.append("_remote_debugging (3.14) lists one interpreter only: matched "
                             "interpreter %s" % match[0].get("id"))
    # 3.14's unwinder stops at the first frame a C call entered the interpreter through (e.g.
    # Context.run() in threading's _bootstrap_inner), so it may list only the innermost frames.
    prefix_only = version < (3, 15)
    fields = ["function", "file", "line"]
    if version >= (3, 15):
        fields += COLUMN_FIELDS
    truncated = 0
    garbled = 0
    for want_interp, got_interp in pairs:
        interp_id = got_interp.get("id")
        got_threads = {t.get("tid"): t for t in got_interp.get("threads") or []}
        want_threads = {t["tid"]: t for t in want_interp["threads"]}
        p = thread_set_problem("interpreter %s" % interp_id, want_threads, got_threads,
                               {tid: t.get("name") for tid, t in got_threads.items()})
        if p is not None:
            problems.append(p)
        for tid in sorted(set(want_threads) & set(got_threads)):
            want = want_threads[tid]
            got = got_threads[tid]
            label = thread_label(tid, got.get("name"), interp_id)
            status = want.get("status")
            if status is not None:
                for bit, field in (("THREAD_STATUS_MAIN_THREAD", "main"),
                                   ("THREAD_STATUS_HAS_EXCEPTION", "has_exception")):
                    if bit in bits and bool(status & bits[bit]) != got.get(field):
                        problems.append(Problem("%s: %s %r, _remote_debugging status %#x says %r"
                                                % (label, field, got.get(field), status,
                                                   bool(status & bits[bit]))))
            want_frames = drop_init_shims(remote_frames_as_pytop(want["frames"]), notes,
                                          "_remote_debugging")
            got_frames = python_frames(got)
            if prefix_only and len(want_frames) < len(got_frames):
                truncated += 1
                got_frames = got_frames[:len(want_frames)]
            if version < (3, 15):
                garbled += accept_non_ascii(want_frames, got_frames)
            diff = frame_diff(want_frames, got_frames, fields, "_remote_debugging",
                              "pytop --json")
            if diff is not None:
                problems.append(Problem("%s: %s" % (label, diff[1][0]), diff[1][1:]))
    if garbled:
        notes.append("_remote_debugging (%d.%d) misreads non-ASCII strings: %d such value(s) "
                     "not compared" % (version[0], version[1], garbled))
    if truncated:
        notes.append("_remote_debugging (%d.%d) listed a shorter stack for %d thread(s): "
                     "compared those frames only" % (version[0], version[1], truncated))
    return problems


# ---------------------------------------------------------------- text dumps

FILE_LINE_RE = re.compile(r'^  File "(.*)", (?:line (\d+|\?), )?in (.*?)(?:  opcode=\S+)?$')
PYTOP_HEADER_RE = re.compile(r'^Thread (\d+)(?: "((?:[^"\\]|\\.)*)")? \((.*)\):$')
CPYTHON_HEADER_RE = re.compile(r"^Stack dump(?: for PID \d+)?, thread (\d+) \((.*)\):$")


def parse_text_dump(text, header_re, cwd=None):
    """Thread blocks of a traceback-like dump: [{tid, name, states, frames, header}].

    Frames are {file, line, function}, listed innermost first like the JSON (the text prints
    most recent call last). A block is its header and the indented lines after it; relative
    file names (CPython's dump shortens those under its cwd) are resolved against CWD.
    """
    blocks = []
    block = None
    for line in text.splitlines():
        m = header_re.match(line)
        if m:
            groups = m.groups()
            tid = int(groups[0])
            name = None
            if len(groups) == 3 and groups[1] is not None:
                name = re.sub(r"\\(.)", r"\1", groups[1])
            details = groups[-1]
            if not details.endswith("most recent call last"):
                block = None
                continue
            states = [s.strip() for s in re.split(r"[;,]", details)][:-1]
            block = {"tid": tid, "name": name, "states": states, "frames": [], "header": line}
            blocks.append(block)
            continue
        if block is None:
            continue
        if not line.startswith(" "):
            block = None
            continue
        m = FILE_LINE_RE.match(line)
        if m:
            path = m.group(1)
            if cwd and not path.startswith(("<", "~")) and not os.path.isabs(path):
                path = os.path.normpath(os.path.join(cwd, path))
            lineno = m.group(2)
            block["frames"].append({
                "file": path,
                "line": int(lineno) if lineno and lineno.isdigit() else None,
                "function": m.group(3),
            })
    for b in blocks:
        b["frames"].reverse()
    return blocks


def pair_blocks(threads, blocks):
    """Pairs JSON threads [(interp_id, thread)] with text blocks of the same tid.

    A tid can appear once per interpreter; among equal tids the block with equal frames wins,
    else the first unused one. Returns [(interp_id, thread, block or None)], unused blocks.
    """
    unused = list(blocks)
    pairs = []
    for interp_id, t in threads:
        same = [b for b in unused if b["tid"] == t.get("tid")]
        want = [(f.get("file"), f.get("line"), f.get("function")) for f in python_frames(t)]
        best = next((b for b in same
                     if [(f["file"], f["line"], f["function"]) for f in b["frames"]] == want),
                    same[0] if same else None)
        if best is not None:
            unused.remove(best)
        pairs.append((interp_id, t, best))
    return pairs, unused


STATE_WORDS = (("main thread", "main"), ("has exception", "has_exception"), ("has GIL", "gil"),
               ("on CPU", "on_cpu"), ("waiting for GIL", "gil_requested"))


def all_threads(snap):
    return [(i.get("id"), t)
            for i in snap.get("interpreters") or [] for t in i.get("threads") or []]


def compare_text_with_json(text, snap):
    """(d) pytop's text dump must show the threads, headers and frames of its JSON dump."""
    problems = []
    blocks = parse_text_dump(text, PYTOP_HEADER_RE)
    if not blocks:
        head = text.splitlines()[:5]
        return [Problem("no thread header like 'Thread TID \"NAME\" (...; most "
                        "recent call last):' found", ["text begins:"] + head)]
    pairs, unused = pair_blocks(all_threads(snap), blocks)
    for interp_id, t, b in pairs:
        label = thread_label(t.get("tid"), t.get("name"), interp_id)
        if b is None:
            problems.append(Problem("no block for %s" % label))
            continue
        if t.get("name") is not None and b["name"] != t.get("name"):
            problems.append(Problem("%s: header names %s" % (label, q(b["name"])),
                                    [b["header"]]))
        for words, field in STATE_WORDS:
            value = t.get(field)
            if value is not None and (words in b["states"]) != value:
                problems.append(Problem("%s: header %s '%s' but JSON %s is %r" % (
                    label, "says" if words in b["states"] else "lacks", words, field, value),
                    [b["header"]]))
        # "idle" only where pytop knows the thread wants no GIL (3.15+); where it cannot know
        # (gil_requested null) a thread off CPU without the GIL is "no GIL", never "idle".
        # Whether gil_requested is known depends on the version only, so the two reads agree.
        asked = t.get("gil_requested")
        if "idle" in b["states"] and asked is not False:
            problems.append(Problem("%s: header says 'idle' but JSON gil_requested is %r" % (
                label, asked), [b["header"]]))
        if "no GIL" in b["states"] and asked is not None:
            problems.append(Problem("%s: header says 'no GIL' but JSON gil_requested is %r" % (
                label, asked), [b["header"]]))
        want = [{"file": f.get("file"), "line": f.get("line"), "function": f.get("function")}
                for f in python_frames(t)]
        diff = frame_diff(want, b["frames"], ["file", "line", "function"], "pytop --json",
                          "pytop --dump (text)")
        if diff is not None:
            problems.append(Problem("%s: %s" % (label, diff[1][0]), diff[1][1:]))
    for b in unused:
        problems.append(Problem("thread %s is not in the JSON dump" % b["tid"],
                                [b["header"]]))
    return problems


def compare_cpython_dump(cpython_text, cwd, pytop_text, notes):
    """(c) `python3.15 -m profiling.sampling dump -a` vs pytop's text dump, thread by thread."""
    problems = []
    theirs = parse_text_dump(cpython_text, CPYTHON_HEADER_RE, cwd=cwd)
    ours = parse_text_dump(pytop_text, PYTOP_HEADER_RE)
    if not theirs:
        return [Problem("profiling.sampling dump: no thread found in its output",
                        cpython_text.splitlines()[:5])]
    # Pair by tid (and by frames, for a tid that has a thread state in two interpreters).
    pairs, unused = pair_blocks([(None, b) for b in theirs], ours)
    for _, their, our in pairs:
        label = "thread %s" % their["tid"]
        if our is None:
            problems.append(Problem("profiling.sampling dump has %s, pytop --dump has not"
                                    % label, [their["header"]]))
            continue
        for words in ("main thread", "has exception"):
            if (words in their["states"]) != (words in our["states"]):
                problems.append(Problem("%s: '%s' in %s header only" % (
                    label, words, "CPython's" if words in their["states"] else "pytop's"),
                    [their["header"], our["header"]]))
        their_frames = drop_init_shims(their["frames"], notes, "profiling.sampling dump")
        diff = frame_diff(their_frames, our["frames"], ["file", "line", "function"],
                          "profiling.sampling dump", "pytop --dump (text)")
        if diff is not None:
            problems.append(Problem("%s: %s" % (label, diff[1][0]), diff[1][1:]))
    for b in unused:
        problems.append(Problem("pytop --dump has thread %s, profiling.sampling dump has not"
                                % b["tid"], [b["header"]]))
    return problems
