#!/usr/bin/env python3
"""embed.py - the Lua scripts (src/redis/lua/NAME.lua) as the C dlock sends them.

  embed.py [--luac LUAC] OUT.c NAME.lua...
      writes OUT.c, defining `const struct script script_NAME` (scripts.h)
      for each file: its body, the body's SHA-1 for EVALSHA, its numkeys.
  embed.py --list DIR NAME.lua...
      writes each body to DIR/NAME.lua, exactly the bytes dlock sends, and
      prints "NAME SHA-1 NUMKEYS" a line: tests/fence.bats loads each into
      Redis and compares the SHA-1 it answers.

A script file is its header, the comment lines up to the first blank line,
then its body. The header says what KEYS and ARGV hold and what the script
returns, and has one line "-- numkeys: N", the number of KEYS that EVALSHA
passes (struct script's n_keys); no literal KEYS[n] in the body may be
beyond it.

A line "-- include: lib/NAME.lua" in the body is replaced by that file
(src/redis/lua/lib/NAME.lua, whole, comments included), so that a helper the
scripts share (wake(), split()) is written once; the SHA-1 is taken of
the body with the includes in it. An included file includes nothing.

The header is not sent: every EVAL (the fallback when a server lacks the
script) would carry it for nothing. Comments within the body are sent:
they sit by the code they explain, and cost bytes only on EVAL. Redis
counts the lines of an error from the body's first line ("@user_script:
13"), so each script also gets a line map, from a line of the body to a
file and a line in it counted from the file's top; node_script_error()
turns Redis's line into "acquire script, line 57" or "acquire script,
lib/wake.lua line 5".

The SHA-1 is computed here, from the bytes written into the C string, so
no hash is kept by hand. --luac LUAC (luac5.1 -p, Redis's Lua is 5.1)
checks each file's syntax first, the included ones too, with the files'
own line numbers; Redis's SCRIPT LOAD, in tests/fence.bats, is the check
that counts.
"""
import hashlib
import os
import re
import subprocess
import sys


def die(msg):
    sys.exit("embed.py: " + msg)


INCLUDE = re.compile(rb"-- include: (lib/[a-z_][a-z0-9_]*\.lua)")


def read(path):
    with open(path, "rb") as f:
        text = f.read()
    # C strings: a NUL would cut the body short of what the SHA-1 hashes
    if b"\0" in text:
        die("%s: a NUL byte" % path)
    return text


def expand(path, body, first):
    """-> (body with its includes, [(body line, file, file line)]): the
    body's line 1 is the file's line first; each segment of the map runs
    until the next"""
    out, segs, line = [], [], 1
    name = os.path.basename(path)
    for n, l in enumerate(body.splitlines(keepends=True), first):
        m = INCLUDE.fullmatch(l.rstrip(b"\n"))
        if not m:
            if not segs or segs[-1][1] != name:	# first, or after an include
                segs.append((line, name, n))
            out.append(l)
            line += 1
            continue
        inc = m.group(1).decode()
        text = read(os.path.join(os.path.dirname(path), inc))
        if INCLUDE.search(text):
            die("%s: includes another file" % inc)
        if not text.endswith(b"\n"):
            die("%s: no newline at the end" % inc)
        segs.append((line, inc, 1))
        out.append(text)
        line += text.count(b"\n")
    return b"".join(out), segs


def parse(path):
    """-> (name, body bytes, numkeys, line map)"""
    name = os.path.basename(path)
    if not name.endswith(".lua") or not re.fullmatch(r"[a-z_][a-z0-9_]*", name[:-4]):
        die("%s: not NAME.lua with NAME a C identifier" % path)
    name = name[:-4]
    text = read(path)
    head, sep, body = text.partition(b"\n\n")
    if not sep or not body:
        die("%s: no blank line between the header and the body" % path)
    numkeys = None
    for n, line in enumerate(head.split(b"\n"), 1):
        if not line.startswith(b"--"):
            die("%s:%d: the header is comment lines only" % (path, n))
        m = re.fullmatch(rb"-- numkeys: ([0-9]+)", line)
        if m:
            if numkeys is not None:
                die("%s:%d: a second numkeys" % (path, n))
            numkeys = int(m.group(1))
    if numkeys is None:
        die("%s: the header has no '-- numkeys: N' line" % path)
    body, segs = expand(path, body, head.count(b"\n") + 3)
    used = [int(k) for k in re.findall(rb"KEYS\[([0-9]+)\]", body)]
    if used and max(used) > numkeys:
        die("%s: KEYS[%d] beyond numkeys %d" % (path, max(used), numkeys))
    return name, body, numkeys, segs


def c_string(line):
    """One line of the body as a C string literal's contents."""
    out = []
    prev = None
    for b in line:
        c = chr(b)
        if c in '\\"':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif c == "?" and prev == "?":
            out.append("\\?")	# no trigraphs (-std=c11 has them)
        elif 0x20 <= b < 0x7f:
            out.append(c)
        else:
            out.append("\\%03o" % b)	# three digits: a digit after is safe
        prev = c
    return "".join(out)


def write_c(out, scripts):
    lines = [
        "/* Generated by src/redis/lua/embed.py from the scripts in src/redis/lua: edit those. */",
        '#include "src/redis/scripts.h"',
    ]
    for name, body, numkeys, segs in scripts:
        lines += ["", "static const struct script_line lines_%s[] = {" % name]
        lines += ['\t{ %d, "%s", %d },' % s for s in segs]
        lines += ["\t{ 0, NULL, 0 },", "};"]
        lines += [
            "",
            "const struct script script_%s = {" % name,
            '\t.name = "%s",' % name,
            "\t.body =",
        ]
        lines += ['\t\t"%s"' % c_string(l) for l in body.splitlines(keepends=True)]
        lines[-1] += ","
        lines += [
            '\t.sha = "%s",' % hashlib.sha1(body).hexdigest(),
            "\t.n_keys = %d," % numkeys,
            "\t.lines = lines_%s," % name,
            "};",
        ]
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


def main(argv):
    luac = None
    if argv[:1] == ["--luac"] and len(argv) > 1:
        luac, argv = argv[1], argv[2:]
    if argv[:1] == ["--list"] and len(argv) > 2:
        for name, body, numkeys, _ in map(parse, argv[2:]):
            with open(os.path.join(argv[1], name + ".lua"), "wb") as f:
                f.write(body)
            print(name, hashlib.sha1(body).hexdigest(), numkeys)
        return
    if len(argv) < 2 or argv[0].startswith("-"):
        die("usage: embed.py [--luac LUAC] OUT.c NAME.lua... | --list DIR NAME.lua...")
    if luac:
        libs = sorted({os.path.join(os.path.dirname(p), m.decode())
                       for p in argv[1:] for m in INCLUDE.findall(read(p))})
        r = subprocess.run([luac, "-p"] + argv[1:] + libs)
        if r.returncode != 0:
            die("%s -p failed" % luac)
    write_c(argv[0], [parse(p) for p in argv[1:]])


if __name__ == "__main__":
    main(sys.argv[1:])
