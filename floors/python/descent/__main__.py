"""The `descent` command.

    descent trace "descent.ones(2, 2) + 1" [--repeat N] [--chrome FILE] [--save FILE] [--reference]
    descent replay FILE [--chrome FILE]
    descent verify [--op NAME] [--seed N] [--device DEV] [--autograd | --compiled]
    descent ops
    descent bench matmul --ladder [--device cpu|DEV] [--sizes N,..] [--dtypes D,..] [--threads all,1]
    descent app [--code CODE | --trace FILE] [--compare FILE] [--presenter] [--screenshot OUT.png] ...
    descent lesson [NAME] [--answers A,B] [--check FILE.py] [--handout DIR] [--validate [PATH]] [--reset]
"""
import argparse
import glob
import os
import subprocess
import shutil
import signal
import sys
import traceback

import descent
from descent import _C, tracing


class CommandError(Exception):
    """A problem the command reports in one line, exit status 2 (no traceback)."""


def write(what, path, save):
    """save(path), or a CommandError that names the file and the reason."""
    try:
        save(path)
    except (OSError, RuntimeError, TypeError, ValueError) as e:
        raise CommandError(f"cannot write the {what} to '{path}': {e}") from None


def show(result, chrome, runs=1):
    """Prints the header and the tree (with runs > 1, the last run's, timed by
    the warm runs: Note [Warm medians] in tracer/trace.h); writes Chrome JSON
    when asked."""
    tree = None
    if runs > 1:
        try:
            tree = result.format_tree_repeated(runs)
        except ValueError:  # the roots do not split into runs (a file edited, or a run cut short)
            runs = 1
    print(tracing.header(result, runs))
    print(tree if tree is not None else result.format_tree(), end="")
    if chrome:
        write("Chrome trace", chrome, result.save_chrome)
        print(f"wrote {chrome} (open it in https://ui.perfetto.dev or chrome://tracing)")


def check_output_files(args):
    """--save and --chrome name files, and not one file twice (the second write would replace the first)."""
    for option in ("save", "chrome"):
        path = getattr(args, option, None)
        if path is not None and not path.strip():
            raise CommandError(f"--{option}: the file name is empty")
    save, chrome = getattr(args, "save", None), getattr(args, "chrome", None)
    if save and chrome and os.path.abspath(save) == os.path.abspath(chrome):
        raise CommandError(f"--save and --chrome name the same file, '{save}': the second would replace the first")


def exit_on_ctrl_c(signum, frame):
    """SIGINT during `descent trace`: one line, and exit 130 (128 + SIGINT, as a shell reports it) at once.
    Raising KeyboardInterrupt instead would end the user's code just as soon, but then the recording would
    be collected into a trace (about a microsecond a span: seconds for the millions a loop records) only to
    be thrown away; this handler runs between two bytecodes, so a C++ kernel in progress finishes first."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    print("descent trace: interrupted (Ctrl-C); nothing is shown", file=sys.stderr)
    os._exit(130)


def cmd_trace(args):
    signal.signal(signal.SIGINT, exit_on_ctrl_c)
    if args.reference:
        descent.set_kernel_variant("reference")
    if args.repeat < 1:
        raise CommandError(f"--repeat must be at least 1, got {args.repeat}")
    check_output_files(args)
    try:
        result, error = tracing.run(args.code, repeat=args.repeat)
    except SyntaxError as e:
        print(f"descent trace: the code is not valid Python: {e}", file=sys.stderr)
        return 2
    # A run cut short by an exception leaves no whole last run to time: the plain tree then.
    show(result, args.chrome, args.repeat if error is None else 1)
    if args.save:
        write("trace", args.save, result.save)
        print(f"wrote {args.save} (replay it with: descent replay {args.save})")
    if isinstance(error, SystemExit):  # the code called sys.exit(): its status, after the trace
        return error.code if isinstance(error.code, int) else (0 if error.code is None else 1)
    if error is not None:
        print("\nThe code raised an exception (the trace above shows what ran before it):", file=sys.stderr)
        traceback.print_exception(type(error), error, error.__traceback__.tb_next, file=sys.stderr)
        return 1
    return 0


def cmd_replay(args):
    check_output_files(args)
    try:
        result = _C._load_trace(args.file)
    except (ValueError, OSError, MemoryError, descent.OutOfMemoryError) as e:
        print(f"descent replay: {e}", file=sys.stderr)
        return 2
    problems = result.check()  # a file that parses can still hold spans that do not nest
    if problems:
        print(f"descent replay: {args.file}: the spans do not form a tree, so it is not shown:\n{problems}",
              end="", file=sys.stderr)
        return 2
    runs = result.metadata.get("trace.runs", "1")  # saved by `descent trace --repeat N --save`
    show(result, args.chrome, int(runs) if runs.isdigit() and int(runs) > 0 else 1)
    return 0


def cmd_verify(args):
    if args.autograd:  # the reference-language pairs (descent/pairs.py)
        from descent.pairs import verify_pairs
        verdicts = verify_pairs(args.seed)
        for v in verdicts:
            print(f"{'ok' if v['passed'] else 'FAIL':5} {v['pair']:16} {v['check']:22} {v['detail']}")
        failed = sum(not v["passed"] for v in verdicts)
        print(f"{len(verdicts) - failed} of {len(verdicts)} verdicts hold")
        return 1 if failed else 0
    # descent.compile's verifier: Note [Translation validation of a fused kernel], descent/_compile/verify.py
    if args.compiled:
        from descent._compile import verify as compiled
        rows = compiled.suite(args.seed, devices=("cpu", args.device) if args.device else None)
        print(compiled.format_suite(rows))
        failed = sum(not ok for _, ok, _ in rows)
        print(f"{len(rows) - failed} of {len(rows)} compiled functions hold")
        return 1 if failed else 0
    try:
        verdicts = descent.verify(args.op, args.seed, args.device)
        if args.device and args.op in (None, "mm", "bmm", "aten::mm", "aten::bmm"):
            # and every rung of the device's matmul ladder (Note [The matmul ladder]): ops named "mm[rung] shape"
            verdicts += _C._verify_matmul_rungs(args.seed, args.device)
    except RuntimeError as e:  # verify(): no op named 'X' (see: descent ops)
        print(f"descent {e}", file=sys.stderr)
        return 2
    failed = 0
    for v in verdicts:
        failed += not v["passed"]
        detail = "" if v["claim"] == "unsupported" else v["detail"]
        print(f"{'ok' if v['passed'] else 'FAIL':5} {v['op']:24} {v['dtype']:8} {v['claim']:13} "
              f"{v['variants']:26} max|diff|={v['max_abs_diff']:<9.3g} bound={v['bound']:<9.3g} {detail}")
    print(f"{len(verdicts) - failed} of {len(verdicts)} verdicts hold")
    return 1 if failed else 0


def cmd_ops(args):
    for op in _C._ops():
        print(f"{op['kind']:10} {op['exactness']:11} {op['dispatch']:25} {op['derivative'] or '-':19} {op['schema']}")
    return 0


def app_path():
    """The app's executable: $DESCENT_APP, else descent-app beside this build's python/ folder."""
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.environ.get("DESCENT_APP") or os.path.join(build, "descent-app")


def cmd_app(rest):
    """Runs the app with the arguments after `descent app`, passed on as they are."""
    app = app_path()
    if not os.access(app, os.X_OK):
        print(f"descent app: the app is not built ({app} is missing): it needs Debian's libimgui-dev and "
              "libglfw3-dev (tools/install-deps installs them), then a rebuild", file=sys.stderr)
        return 2
    argv = [app] + rest
    if not os.environ.get("DISPLAY") and "--screenshot" in rest:
        # Headless: draw on a virtual X server when there is no display (-noreset: a server that resets as
        # the app leaves races xvfb-run's clean-up, which then exits 5 whatever the app said).
        if not shutil.which("xvfb-run"):
            print("descent app: no display, and xvfb-run (Debian's xvfb) is not installed to draw without one",
                  file=sys.stderr)
            return 2
        argv = ["xvfb-run", "-a", "-s", "-screen 0 3840x2400x24 -noreset"] + argv
    sys.stdout.flush()
    os.execvp(argv[0], argv)


def _end_with_parent(parent_pid):
    """Asks Linux to send this process SIGTERM when the process that started it ends, however it
    ends (SIGKILL included); ends at once if that has already happened. Note [A rank ends with its
    launcher]."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the link is not made
        return
    if os.getppid() != parent_pid:
        os._exit(1)


# Note [A rank ends with its launcher]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# `descent run` starts mpirun, which starts the ranks. If the launcher is
# killed outright (SIGKILL: a test's timeout, a closed terminal's kill -9),
# it cannot pass anything on, and mpirun and its ranks would go on alone: a
# rank waiting in a collective spins forever on a core. So each link of the
# chain asks the kernel for a SIGTERM when its parent ends (prctl's
# PR_SET_PDEATHSIG): mpirun when the launcher ends, each rank when mpirun
# (or the daemon that started it) ends. PyTorch's
# torch.multiprocessing.spawn makes the same call in each worker it starts
# (with SIGINT). A process whose parent ended before it could ask ends at
# once.


# Note [A failed rank ends the job]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A rank whose script raises would otherwise go on to Python's exit, and
# there to MPI_Finalize, which waits for every other rank; the others wait in
# their next collective for the rank that will never come: the job sat for
# the collective's 30-minute timeout. torchrun instead stops every worker as
# soon as one fails and prints which rank failed and its traceback. So a
# rank's script runs inside a wrapper: on an exception (or sys.exit with a
# non-zero code) the rank prints its traceback, writes it to the launcher's
# status folder (DESCENT_RUN_STATUS) and leaves at once with os._exit,
# skipping MPI_Finalize; mpirun sees a rank end without finalizing and ends
# the others. The launcher then names the rank that failed first, its exit
# code and its exception, and exits 1. A rank that exits 0 while the others
# still wait for it in a collective is no failure, to torchrun as here: they
# wait for their collective's timeout (init_process_group(timeout=...)).


def _run_rank_script(script, status_dir):
    """Runs the script as `python script.py` would (its folder first on sys.path); returns its
    exit code, or leaves the process at once if it failed (Note [A failed rank ends the job])."""
    import runpy
    sys.path[0:0] = [os.path.dirname(os.path.abspath(script))]
    rank = os.environ.get("RANK", "0")
    try:
        runpy.run_path(script, run_name="__main__")
        return 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) or e.code is None else 1
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
        if not code:
            return 0
        why = f"exited with sys.exit({e.code!r})"
    except BaseException as e:  # KeyboardInterrupt too: the other ranks must not be left waiting
        code = 1
        tb = e.__traceback__  # from the script's own frame on, as `python script.py` prints it
        while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != os.path.abspath(script):
            tb = tb.tb_next
        tb = "".join(traceback.format_exception(type(e), e, tb or e.__traceback__))
        print(tb, end="", file=sys.stderr)
        why = f"{type(e).__name__}: {e}\n{tb}"
    if status_dir:
        try:
            with open(os.path.join(status_dir, f"rank{rank}.failed"), "w") as f:
                f.write(f"{code}\n{why}")
        except OSError:
            pass
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _failed_ranks(status_dir):
    """[(rank, exit code, why)] of the ranks that failed, earliest first."""
    found = []
    for name in os.listdir(status_dir):
        if name.startswith("rank") and name.endswith(".failed"):
            path = os.path.join(status_dir, name)
            with open(path) as f:
                code, _, why = f.read().partition("\n")
            found.append((os.path.getmtime(path), int(name[4:-7]), int(code), why))
    return [(rank, code, why) for _, rank, code, why in sorted(found)]


def cmd_run(args):
    """`descent run --nproc N script.py ...`: N processes of the script under Open MPI's mpirun, each
    with torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT); the mpi
    backend of descent.distributed takes its ranks from MPI itself."""
    if args.as_rank:  # inside mpirun: this process is one rank
        _end_with_parent(os.getppid())
        from descent import distributed
        distributed._rank_env()
        sys.argv = [args.script] + args.args
        status_dir = os.environ.get("DESCENT_RUN_STATUS", "")
        if not args.trace:
            return _run_rank_script(args.script, status_dir)
        from descent import tracing
        with tracing.trace() as t:  # the whole script, then this rank's file (Note [Merging the ranks' traces])
            code = _run_rank_script(args.script, status_dir)
        t.result.save(os.path.join(args.trace, f"rank{os.environ.get('RANK', '0')}.descent"))
        return code
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        raise CommandError("no mpirun on PATH: tools/install-deps installs Debian's Open MPI (openmpi-bin)")
    if args.nproc < 1:
        raise CommandError(f"--nproc must be 1 or more, not {args.nproc}")
    if not os.path.exists(args.script):
        raise CommandError(f"no such script: {args.script}")
    env = dict(os.environ)
    if os.geteuid() == 0:  # Open MPI refuses root unless told twice
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = [mpirun, "--oversubscribe", "-np", str(args.nproc), sys.executable, "-m", "descent", "run", "--as-rank"]
    if args.trace:
        if os.path.exists(args.trace) and not os.path.isdir(args.trace):
            raise CommandError(f"--trace {args.trace}: it is a file; --trace names a folder for the ranks' traces")
        try:
            os.makedirs(args.trace, exist_ok=True)
            for old in glob.glob(os.path.join(args.trace, "rank*.descent")):  # an earlier run's: never merged again
                os.remove(old)
            probe = os.path.join(args.trace, ".descent-run-probe")  # a folder the ranks cannot write: say so now
            open(probe, "w").close()
            os.remove(probe)
        except OSError as e:
            raise CommandError(f"--trace {args.trace}: cannot write the ranks' traces there: "
                               f"{e.strerror or e}") from None
        cmd += ["--trace", os.path.abspath(args.trace)]
    me = os.getpid()
    import tempfile
    with tempfile.TemporaryDirectory(prefix="descent-run-") as status_dir:
        env["DESCENT_RUN_STATUS"] = status_dir
        rc = subprocess.run(cmd + [args.script] + args.args, env=env,
                            preexec_fn=lambda: _end_with_parent(me)).returncode
        failed = _failed_ranks(status_dir)
    if failed:  # torchrun's "Root Cause": the first rank that failed
        rank, code, why = failed[0]
        others = f" ({len(failed) - 1} more failed after it)" if len(failed) > 1 else ""
        print(f"descent run: rank {rank} of {args.nproc} failed (exit code {code}): {why.splitlines()[0]}{others}; "
              f"the other ranks were stopped", file=sys.stderr)
        return 1
    if rc != 0 or not args.trace:
        return rc
    from descent import _C
    paths = [os.path.join(args.trace, f"rank{r}.descent") for r in range(args.nproc)]
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        raise CommandError(f"--trace: no trace from {', '.join(missing)}")
    merged = os.path.join(args.trace, "merged.descent")
    t = _C._merge_traces(paths)
    t.save(merged)
    print(f"descent run: {args.nproc} ranks traced, {t.span_count} spans on one timeline: {merged} "
          f"(descent app --trace {merged})", file=sys.stderr)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="descent", description="See one line of Python descend eight floors.")
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("trace", help="run Python code with tracing on and print each call floor by floor")
    t.add_argument("code", help='Python code, e.g. "descent.ones(2, 2) + 1"')
    t.add_argument("--chrome", metavar="FILE", help="also write Chrome Trace Event JSON (Perfetto)")
    t.add_argument("--save", metavar="FILE", help="also write descent's own trace file (replayable)")
    t.add_argument("--reference", action="store_true", help="run the reference kernels instead of the optimized")
    t.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="run the code N times in one recording; show the last run timed by the warm median of "
                        "runs 2..N, the tracer's cost taken out, beside the cold first run")
    t.set_defaults(fn=cmd_trace)
    r = sub.add_parser("replay", help="print a trace saved with --save")
    r.add_argument("file")
    r.add_argument("--chrome", metavar="FILE", help="convert it to Chrome Trace Event JSON")
    r.set_defaults(fn=cmd_replay)
    v = sub.add_parser("verify", help="check optimized kernels against the reference ones")
    v.add_argument("--op", help="only this op (e.g. sum, max.dim)")
    v.add_argument("--seed", type=int, default=1)
    v.add_argument("--device", help="run the ops on this device (sim:0, cuda:0) against the CPU's reference loops")
    v.add_argument("--autograd", action="store_true",
                   help="check the reference-language pairs instead: autograd against a hand-written backward")
    v.add_argument("--compiled", action="store_true",
                   help="check descent.compile instead: each fused kernel proved equal to its graph, and the "
                        "compiled results and gradients against eager")
    v.set_defaults(fn=cmd_verify)
    o = sub.add_parser("ops", help="list the op table")
    o.set_defaults(fn=cmd_ops)
    rn = sub.add_parser("run", help="run a script in N processes, as torchrun does (descent.distributed's mpi backend)")
    rn.add_argument("--nproc", type=int, default=1, metavar="N", help="how many processes (ranks)")
    rn.add_argument("--trace", metavar="DIR",
                    help="trace every rank into DIR/rankR.descent, then merge them into DIR/merged.descent")
    rn.add_argument("--as-rank", action="store_true", help=argparse.SUPPRESS)
    rn.add_argument("script")
    rn.add_argument("args", nargs=argparse.REMAINDER)
    rn.set_defaults(fn=cmd_run)
    from descent import bench
    bench.add_parser(sub)
    from descent.lessons import terminal as lesson_terminal
    lesson_terminal.add_parser(sub)
    # `descent app ...` hands its arguments to the app untouched (its own parser
    # reads them); the entry here only lists it in --help.
    sub.add_parser("app", help="open the desktop app (descent app --help lists its options)", add_help=False)
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["app"]:
        return cmd_app(argv[1:])
    args = p.parse_args(argv)
    try:
        return args.fn(args)
    except CommandError as e:
        print(f"descent {args.command}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: one line, not a traceback through descent's own code
        print(f"descent {args.command}: interrupted (Ctrl-C)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # `descent ops | head`: the reader has gone, which is not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush cannot fail again
        sys.exit(0)
