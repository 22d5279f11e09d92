"""A worker that misbehaves on request, for the fault tests (``tests/test_worker.py``).

It speaks the real protocol (:func:`rnnbench.workers.protocol.serve`) and answers correctly (the
answer it is given in ``settings["answer"]``: the runner's float64 reference, so this worker
needs no framework and starts at once) unless the lane it is asked for names a fault:
``crash-first-call`` / ``crash-sample`` (killed by SIGKILL in the middle of that request, as a
segfault or the OOM killer would), ``exit-first-call`` (``os._exit(3)`` after a line on stderr),
``hang-first-call`` (sleeps past any timeout), ``raise-first-call`` / ``raise-prepare`` (an
exception, which the worker survives), ``print`` (writes to stdout, which must not reach the
replies).
"""

from __future__ import annotations

import os
import signal
import sys
import time

from rnnbench.workers.protocol import ArrayStep, protocol_streams, serve


class FaultStep(ArrayStep):
    def __init__(self, request):
        super().__init__()
        self.fault = request["lane"]
        if self.fault == "raise-prepare":
            raise ValueError("cannot prepare this\nsecond line")
        self.request = request
        self.extra = {"fault": self.fault, "pid": os.getpid()}

    def _maybe_fail(self, when):
        if self.fault == f"crash-{when}":
            os.kill(os.getpid(), signal.SIGKILL)
        if self.fault == f"exit-{when}":
            print("fatal: the framework gave up", file=sys.stderr, flush=True)
            os._exit(3)
        if self.fault == f"hang-{when}":
            time.sleep(3600)
        if self.fault == f"raise-{when}":
            raise RuntimeError(f"the framework raised in {when}")

    def first_call(self):
        self._maybe_fail("first-call")
        if self.fault == "print":
            print("noise on stdout")
            os.write(1, b"raw noise on fd 1\n")
        return super().first_call()

    def sample(self, budget_s, min_runs, max_runs):
        self._maybe_fail("sample")
        return super().sample(budget_s, min_runs, max_runs)

    def run(self):
        return self.request["settings"]["answer"]

    def outputs(self, result):
        return dict(result)

if __name__ == "__main__":
    streams = protocol_streams()
    serve(FaultStep, {"fault": True}, streams)
