#!/usr/bin/env python3
"""perf_by_caller.py PERF.DATA: the shares of a profile recorded with call graphs (--call-graph
dwarf), each sample charged to the first frame outside libc and libstdc++ (malloc, memcmp and
string compares count for whoever called them; issue 26: docs/benchmarks.md "The busy daemon on
each HTTP client"). Shares by leaf DSO: `perf report --no-children --sort dso -g none`."""
import collections
import re
import subprocess
import sys

LIBS = ("libc.so", "libstdc++", "ld-linux", "libm.so")


def main():
    script = subprocess.run(["perf", "script", "-i", sys.argv[1], "-F", "comm,ip,sym,dso"],
                            capture_output=True, text=True, check=True).stdout
    by_caller, n = collections.Counter(), 0
    for sample in script.split("\n\n"):
        lines = [l for l in sample.strip().split("\n") if l.strip()]
        if len(lines) < 2:
            continue
        n += 1
        owner = None
        for frame in lines[1:]:
            m = re.search(r"\(([^)]*)\)\s*$", frame)
            dso = m.group(1) if m else "?"
            if dso == "inlined":  # an inlined frame belongs to the next real one
                continue
            if not any(lib in dso for lib in LIBS):
                owner = dso.split("/")[-1]
                break
        by_caller[owner or "libc/libstdc++ (no caller found)"] += 1
    print("by the first caller outside libc/libstdc++:")
    for name, count in by_caller.most_common(8):
        print(f"  {100 * count / n:5.1f} %  {name}")
    print(f"samples: {n}")


if __name__ == "__main__":
    main()
