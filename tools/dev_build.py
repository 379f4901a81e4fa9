#!/usr/bin/env python3
"""Build the extension in debug (or --release) and place it in python/oxnet,
so ``PYTHONPATH=python python -c 'import oxnet'`` works without installing.

Uses cargo's JSON messages to find the exact artifact (safe with a target
directory shared between checkouts)."""
import json
import os
import shutil
import subprocess
import sys
import sysconfig

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
cmd = ["cargo", "build", "-p", "oxnet-py", "--message-format=json-render-diagnostics"]
if "--release" in sys.argv:
    cmd.append("--release")
proc = subprocess.Popen(cmd, cwd=root, stdout=subprocess.PIPE, text=True)
artifact = None
for line in proc.stdout:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("reason") == "compiler-artifact" and msg["target"]["name"] == "_native":
        for f in msg["filenames"]:
            if f.endswith((".so", ".dylib", ".dll")):
                artifact = f
if proc.wait() != 0 or artifact is None:
    sys.exit("cargo build failed")
suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
dst = os.path.join(root, "python", "oxnet", "_native" + suffix)
tmp = dst + ".tmp"
shutil.copyfile(artifact, tmp)
os.replace(tmp, dst)
print(f"built {dst}")
