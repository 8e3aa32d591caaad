"""The per-mutant fallback for a busy machine: mutmut's own mutated files, one pytest session, one fork per mutant.

The session collects the test files once and runs them once against the original code in this process (it must
pass, like mutmut's clean run; lazy imports and caches are then made once), then forks one child per mutant: the
child sets ``MUTANT_UNDER_TEST`` (the mutated code is imported from ``mutants/src``) and runs the tests in order
until the first failure. The tests that killed a function's earlier mutants run first, then the cheapest
(``../durations.txt``: ``nodeid seconds`` lines, if there). Statuses go to OUT.json as the run goes (a stopped run
resumes): a failing test -> ``killed (recheck)``, all passing -> ``survived``, over ``FALLBACK_LIMIT`` seconds
-> ``timeout``. Each mutant's first failure is in ``../fallback_logs/<mutant>.log``, progress in
``../looper_progress.log``.

Generate the mutants first (``mutmut run`` in the module's staging folder, or its generation step alone), then::

    cd build/mutation/<module>/mutants
    OPENBLAS_NUM_THREADS=1 nice -n 19 python ../../../../tests/mutation/forked.py ../out.json ../names.txt TEST_FILE...

``FALLBACK_FIRST=a.py,b.py`` puts those files' tests first. ``FALLBACK_COVERAGE=1`` runs each mutant only against
the tests that call its function (recorded in the warm-up run; a mutant no test reaches is ``no tests``). ``OPENBLAS_NUM_THREADS=1``: BLAS threads spinning in
every child cost more than the tests.
"""

import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.abspath("src"))
os.environ["MUTANT_UNDER_TEST"] = ""
import pytest  # noqa: E402

import ragloom  # noqa: E402

assert ragloom.__file__.startswith(os.path.abspath("src")), ragloom.__file__
out_path, names_path, *files = sys.argv[1:]
limit = float(os.environ.get("FALLBACK_LIMIT", "600"))
first = [f for f in os.environ.get("FALLBACK_FIRST", "").split(",") if f]
coverage = os.environ.get("FALLBACK_COVERAGE") == "1"
names = [n.strip() for n in open(names_path) if n.strip()]
done = json.load(open(out_path)) if os.path.exists(out_path) else {}
os.makedirs("../fallback_logs", exist_ok=True)
progress = open("../looper_progress.log", "a")


class Looper:
    def __init__(self):
        self.failed = None

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report):
        if report.failed and self.failed is None:
            self.failed = report.nodeid

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        durations = {}
        if os.path.exists("../durations.txt"):
            for line in open("../durations.txt"):
                nodeid, seconds = line.rsplit(" ", 1)
                durations[nodeid] = float(seconds)

        def rank(item: pytest.Item) -> tuple[int, float]:
            return next((i for i, f in enumerate(first) if item.nodeid.startswith(f)), len(first)), durations.get(
                item.nodeid, 0.0
            )

        base = sorted(session.items, key=rank)  # cheap tests first
        by_id = {item.nodeid: item for item in base}
        killers = {}  # function -> the tests that killed its mutants, the latest first
        for logname in sorted(os.listdir("../fallback_logs")):  # seeded from earlier runs
            for line in open(f"../fallback_logs/{logname}", errors="replace"):
                if line.startswith("FAILED ") and line.split()[1] in by_id:
                    function = logname[: -len(".log")].rsplit("__mutmut_", 1)[0]
                    killers.setdefault(function, [])
                    if line.split()[1] not in killers[function]:
                        killers[function].append(line.split()[1])
                    break
        import gc

        session.config._tmp_path_factory.getbasetemp()  # one base folder for every child, made here
        # warm-up: every test once in this process against the original code (lazy imports and caches made once,
        # not in every child); it must pass, as mutmut's clean run. With FALLBACK_COVERAGE=1 it runs in mutmut's
        # "stats" mode and records which mutated functions each test calls: a mutant is then run only against the
        # tests that call its function (a test that never calls it runs the same code either way)
        covering: dict[str, set[str]] = {}  # function -> node ids of the tests calling it
        current = [""]
        if coverage:
            from mutmut.mutation import trampoline

            def record(name: str, caller: str | None = None) -> None:
                covering.setdefault(name, set()).add(current[0])

            trampoline.record_trampoline_hit = record
            os.environ["MUTANT_UNDER_TEST"] = "stats"
        for i, item in enumerate(base):
            current[0] = item.nodeid
            item.ihook.pytest_runtest_protocol(item=item, nextitem=base[i + 1] if i + 1 < len(base) else None)
        os.environ["MUTANT_UNDER_TEST"] = ""
        if self.failed is not None:
            print(f"clean run failed: {self.failed}", file=progress, flush=True)
            return True
        print(f"{time.strftime('%H:%M:%S')} clean run in the parent passed ({len(base)} tests; {len(covering)} mutated functions called)", file=progress, flush=True)
        for name in names:
            if name in done:
                continue
            if gc.get_count()[0] > 500 or not gc.get_freeze_count():
                gc.collect()
                gc.freeze()  # the children's collections skip the parent's objects (no copy-on-write of every page)
            started = time.monotonic()
            cpu0 = os.times()
            log = f"../fallback_logs/{name}.log"
            function = name.rsplit("__mutmut_", 1)[0]
            front = [by_id[n] for n in killers.get(function, [])]
            items = front + [item for item in base if item.nodeid not in killers.get(function, [])]
            if coverage:
                items = [item for item in items if item.nodeid in covering.get(function, ())]
                if not items:
                    done[name] = "no tests"
                    print(f"{time.strftime('%H:%M:%S')} {name}: no tests", file=progress, flush=True)
                    continue
            pid = os.fork()
            if pid == 0:
                fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                os.environ["MUTANT_UNDER_TEST"] = name
                code = 0
                t0 = time.process_time()
                try:
                    for i, item in enumerate(items):
                        nextitem = items[i + 1] if i + 1 < len(items) else None
                        item.ihook.pytest_runtest_protocol(item=item, nextitem=nextitem)
                        if self.failed is not None:
                            os.write(fd, f"\nFAILED {self.failed}\n".encode())
                            os.write(
                                fd,
                                f"items run {i + 1}, child cpu {time.process_time() - t0:.2f} s\n".encode(),
                            )
                            code = 1
                            break
                    else:
                        os.write(fd, f"\n{len(items)} passed\n".encode())
                except BaseException as exc:  # noqa: BLE001
                    os.write(fd, f"\nERROR {exc!r}\n".encode())
                    code = 3
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
            status = None
            while status is None:
                got, wstatus = os.waitpid(pid, os.WNOHANG)
                if got:
                    code = os.waitstatus_to_exitcode(wstatus)
                    status = {0: "survived", 1: "killed (recheck)"}.get(code, f"error {code}")
                elif time.monotonic() - started > limit:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    status = "timeout"
                else:
                    time.sleep(0.02)
            cpu = sum(os.times()[2:4]) - sum(cpu0[2:4])
            if status == "killed (recheck)":
                killer = next((line.split()[1] for line in open(log) if line.startswith("FAILED ")), None)
                if killer in by_id:
                    killers[function] = [killer] + [k for k in killers.get(function, []) if k != killer]
            done[name] = status
            json.dump(done, open(out_path + ".tmp", "w"), indent=1, sort_keys=True)
            os.replace(out_path + ".tmp", out_path)
            print(
                f"{time.strftime('%H:%M:%S')} {name}: {status} ({time.monotonic() - started:.1f} s, cpu {cpu:.1f} s)",
                file=progress,
                flush=True,
            )
        return True


sys.exit(
    pytest.main(
        ["--rootdir=.", "-q", "--tb=native", "-p", "no:cacheprovider", "-p", "no:randomly", "--timeout=120", *files],
        plugins=[Looper()],
    )
)
