#!/usr/bin/env python3
"""Fail when a folder includes a header of a layer above it.

loom's layers, lowest first (docs/architecture.md):

  abi       include/loom/plugin.h, plugins/common/   the plugin ABI and its SDK
  runtime   runtime/, include/loom/runtime/          tensors, graphs, ops, GGUF, status
  registry  registry/, include/loom/registry/        plugins found, loaded, selected
  sched     sched/, include/loom/sched/              graphs cut into splits and run
  llm       llm/, conformance/                       models and sessions; the conformance suite
  top       capi/ (include/loom/loom.h, loom.hpp), tools/   peers: neither includes the other

A folder may include its own layer and any below it. Plugins (plugins/<name>/)
see only the ABI layer and their own folder. tests/, bench/, examples/ and
fuzz/ may include anything.

Second rule: only registry/ (the one wrapper per plugin entry, with its checks)
and the ABI cases of conformance/ (abi_cases.cpp, plugin_cases.cpp: they call a
plugin's entries raw on purpose) touch a plugin's `iface` table.

Usage: check_layers.py [ROOT]   (ROOT defaults to the repository). Prints each
upward include as FILE:LINE: and exits 1 when there is one.
"""
import os
import re
import sys

LEVEL = {"abi": 0, "runtime": 1, "registry": 2, "sched": 3, "llm": 4, "conformance": 4,
         "capi": 5, "tools": 5}

# The folder of a source file -> its layer (None: not checked).
SOURCE_LAYER = {"runtime": "runtime", "registry": "registry", "sched": "sched", "llm": "llm",
                "conformance": "conformance", "capi": "capi", "tools": "tools"}

IFACE_RE = re.compile(r"(->|\.)iface\s*->")
IFACE_ALLOWED = ("conformance/abi_cases.cpp", "conformance/plugin_cases.cpp")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]')


def header_layer(path):
    """The layer an included path belongs to, or None for a system/library header."""
    if path in ("loom/plugin.h",) or path.startswith("common/") or path.startswith("plugins/common/"):
        return "abi"
    if path in ("loom/loom.h", "loom/loom.hpp"):
        return "capi"
    m = re.match(r"loom/(runtime|registry|sched)/", path)
    if m:
        return m.group(1)
    if re.match(r"loom/[^/]+$", path):
        return "unplaced"  # a flat loom/ header other than the C headers
    first = path.split("/", 1)[0]
    if "/" in path and first in SOURCE_LAYER:
        return SOURCE_LAYER[first]
    if "/" in path and first == "plugins":
        return "plugin"
    return None


def check_file(root, rel, own, problems):
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            if (own not in ("registry", "abi", "plugin") and rel not in IFACE_ALLOWED
                    and IFACE_RE.search(line) and not line.lstrip().startswith("//")):
                problems.append(f"{rel}:{n}: calls a plugin's iface table; go through registry/ "
                                "(include/loom/registry/plugin_calls.hpp, Device, Buffer, Stream)")
            m = INCLUDE_RE.match(line)
            if not m:
                continue
            inc = m.group(1)
            layer = header_layer(inc)
            if layer is None:
                continue
            if layer == "unplaced":
                problems.append(f"{rel}:{n}: {inc} is in no layer folder (include/loom/<layer>/)")
                continue
            if own == "plugin":
                folder = rel.split("/")[1]
                if layer != "abi" and not inc.startswith(f"plugins/{folder}/"):
                    problems.append(f"{rel}:{n}: plugin includes {inc} ({layer}); a plugin sees only "
                                    "loom/plugin.h and plugins/common")
                continue
            if layer == "plugin":
                problems.append(f"{rel}:{n}: {own} includes a plugin's file {inc}")
                continue
            if layer != own and LEVEL[layer] >= LEVEL[own]:
                where = "above" if LEVEL[layer] > LEVEL[own] else "beside"
                problems.append(f"{rel}:{n}: {own} includes {inc} of the {layer} layer {where} it")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    root = os.path.abspath(root)
    problems = []
    checked = 0
    for top in list(SOURCE_LAYER) + ["plugins", "include/loom"]:
        base = os.path.join(root, top)
        if not os.path.isdir(base):
            continue
        for dirpath, _, files in os.walk(base):
            for name in sorted(files):
                if not name.endswith((".c", ".cc", ".cpp", ".h", ".hpp", ".cu", ".cuh")):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                parts = rel.split("/")
                if parts[0] == "plugins":
                    if parts[1] == "common":
                        own = "abi"
                    else:
                        own = "plugin"
                elif parts[0] == "include":
                    if len(parts) == 3:
                        own = "capi" if name in ("loom.h", "loom.hpp") else "abi"
                        if name not in ("loom.h", "loom.hpp", "plugin.h"):
                            problems.append(f"{rel}: a header outside the layer folders of include/loom/")
                            continue
                    else:
                        own = parts[2]
                        if own not in LEVEL:
                            problems.append(f"{rel}: include/loom/{own}/ is not a layer")
                            continue
                else:
                    own = SOURCE_LAYER[parts[0]]
                check_file(root, rel, own, problems)
                checked += 1
    for p in problems:
        print(p)
    print(f"check_layers: {checked} files, {len(problems)} upward includes", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
