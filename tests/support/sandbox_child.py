"""A stand-in Gatehouse process, started with secrets in its environment as a real one
is (a variable set later with `os.environ[...] =` is not in /proc/<pid>/environ): runs
one command through tools/sandbox.py and prints its output.

Loads tools/sandbox.py by path — it needs only the standard library — so a test can
start one in ~50 ms instead of importing LangChain.

    python sandbox_child.py <tools/sandbox.py> <workspace> <auto|require|off> <command>
"""

from __future__ import annotations

import importlib.util
import sys

spec = importlib.util.spec_from_file_location("sandbox_under_test", sys.argv[1])
assert spec is not None and spec.loader is not None
sandbox = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = sandbox
spec.loader.exec_module(sandbox)

box = sandbox.choose_sandbox(sys.argv[3], sys.argv[2])
running = box.start(["bash", "-c", sys.argv[4]], sandbox.Access(), timeout_s=10)
assert running.proc.stdout is not None
output = running.proc.stdout.read()
running.proc.wait()
running.stop()
running.close()
sys.stdout.buffer.write(output)
