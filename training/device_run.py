"""Retrain the translators on an accelerator lent for minutes: the scripts that make the
shipped translators (docs/training.md#retraining-the-translators-on-an-accelerator).

Three steps, the middle one a single call on the accelerator's machine:

    python training/device_run.py pack packs/run             # CPU, where the corpora are
    python3 training/device_run.py train packs/run --seconds 480 --out $OUT   # accelerator
        [--precision mixed_bfloat16]
    python training/device_run.py finish RESULTS [--ship]    # CPU: choose, score, ship

``pack`` writes the recipes' training pairs as token ids with their text pipelines
(``zoo.training.packs``), and the wheels that machine lacks (Keras, namex, optree: it has
JAX but no TensorFlow nor Keras), in at most 60 MiB; ``travel`` says what a call would
send. ``train`` installs the wheels, then trains every recipe side by side, one process
each on the JAX backend (a recipe that fine-tunes another, en->fr after its guided
stage, runs after it in the same process), with ``zoo train``'s own code (``driver.train``
on a ``packs.PackedTranslationTask``: fixed batch shapes, the recipe's optimizer, the
weights' moving average, validation loss every pass) and nothing slow: no search, no
translation. Each stops at the deadline if it has not ended before and writes its preset
unfinished, weights in float16; each preset comes back as one tar file, with
``run.json`` saying how every process ended. ``finish`` chooses each preset's decoding
on validation and scores it (``zoo train NAME --retune-decoding``), compares it with the
shipped preset and, with ``--ship``, ships the ones that beat it.

This file imports no Keras at the top: on the accelerator it runs first under a Python
that has none, installs the wheels, and starts its workers with them.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The translators the device run retrains (the en->fr guided stage runs before en->fr).
RECIPES = ("gru_bahdanau_cmn_en", "gru_bahdanau_en_cmn", "gru_bahdanau_en_fr_guided",
           "gru_bahdanau_en_fr", "lstm_seq2seq_cmn_en")
# The wheels of what the accelerator's Python lacks, as the CPU's venv has them.
WHEELS = ("keras", "namex", "optree")
DEVICE_PYTHON = "3.12"  # that machine's python3 (KINDS.md of the device tool)
TRAVEL_LIMIT_BYTES = 64 * 1024 * 1024  # what one call may send: checkout, pack, wheels
LAST_STAGE_SHARE = 0.2  # of a chain's time, kept for its last stage (a short fine-tune)
GRACE_SECONDS = 60  # after the deadline, for the workers to validate and write presets
RUN_FILE = "run.json"


# -- pack (CPU) ----------------------------------------------------------------------------


def command_pack(args):
    from zoo.training import packs

    out = Path(args.out)
    if out.exists():
        raise SystemExit(f"device_run: {out} exists: remove it, or pack into another folder.")
    staging = out.parent / f".{out.name}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        wheels = _download_wheels(staging / "wheels") if not args.no_wheels else 0
        packs.write_pack(args.recipes, staging / "pack", data_dir=args.data_dir,
                         budget_bytes=int(args.budget_mib * packs.MiB) - wheels)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    print(f"{out}: {packs.size_of(out) / packs.MiB:.1f} MiB; {travel_report(out)}")


def _download_wheels(folder):
    """The wheels of ``WHEELS`` at the versions installed here, for the device's Python;
    returns their bytes."""
    import importlib.metadata

    folder.mkdir()
    for name in WHEELS:
        version = importlib.metadata.version(name)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--only-binary=:all:", "--python-version", DEVICE_PYTHON,
                        "--implementation", "cp", "--platform", "manylinux_2_28_x86_64",
                        "--platform", "manylinux_2_17_x86_64", "--platform",
                        "manylinux2014_x86_64", "-d", str(folder), f"{name}=={version}"],
                       check=True)
    return sum(p.stat().st_size for p in folder.iterdir())


def travelling_bytes(root, carried=()):
    """What a device call from the checkout ``root`` sends: its tracked files that are
    there and its untracked files git does not ignore (as ``git ls-files`` lists them),
    and the ``carried`` folders (ignored ones, named in the call's ``carry``)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=root, capture_output=True,
                            check=True).stdout.decode().split("\0")
    files = {Path(root, name) for name in listed if name}
    for folder in carried:
        files |= {p for p in Path(folder).rglob("*")}
    return sum(p.stat().st_size for p in files if p.is_file())


def travel_report(pack, root=ROOT):
    """One line: what a call carrying ``pack`` would send, against the limit."""
    total, checkout = travelling_bytes(root, [pack]), travelling_bytes(root)
    verdict = "fits" if total <= TRAVEL_LIMIT_BYTES else "does NOT fit"
    line = (f"a device call carrying it sends {total / 2**20:.1f} MiB (the checkout "
            f"{checkout / 2**20:.1f} MiB), which {verdict} the {TRAVEL_LIMIT_BYTES / 2**20:.0f}"
            f" MiB it may")
    if total > TRAVEL_LIMIT_BYTES:
        line += ("; the presets need not travel: see docs/training.md#what-travels")
    return line


def command_travel(args):
    print(travel_report(Path(args.pack)))


# -- train (the accelerator) ---------------------------------------------------------------


def chains(names, packed):
    """The recipes ``names`` as chains run one after another in one process: a recipe
    whose ``initial_preset`` is another of them runs after it."""
    after = {name: packed[name]["recipe"].get("initial_preset") for name in names}
    firsts = [name for name in names if after[name] not in names]
    result = []
    for first in firsts:
        chain = [first]
        while nexts := [n for n in names if after[n] == chain[-1]]:
            chain += nexts[:1]
        result.append(chain)
    return result


def stage_deadlines(chain, start, seconds):
    """Each stage's deadline: the last stage of a chain of several keeps
    ``LAST_STAGE_SHARE`` of the time, the stages before it share the rest."""
    if len(chain) == 1:
        return [start + seconds]
    early = seconds * (1 - LAST_STAGE_SHARE) / (len(chain) - 1)
    return [start + early * (i + 1) for i in range(len(chain) - 1)] + [start + seconds]


def command_train(args):
    started = time.time()
    _check_precision(args.precision)  # before anything is installed or started
    pack, out, run = Path(args.pack), Path(args.out), Path(args.run_dir)
    out.mkdir(parents=True, exist_ok=True)
    run.mkdir(parents=True, exist_ok=True)
    site = _install_wheels(pack / "wheels", run / "site")
    manifest = json.loads((pack / "pack" / "pack.json").read_text(encoding="utf-8"))
    names = args.recipes or list(manifest["recipes"])
    deadline = started + args.seconds
    env = {**os.environ, "KERAS_BACKEND": "jax", "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [site, str(ROOT),
                                                       os.environ.get("PYTHONPATH")])),
           # one share of the accelerator's memory each (JAX takes 75% by default)
           "XLA_PYTHON_CLIENT_MEM_FRACTION": f"{0.9 / len(chains(names, manifest['recipes'])):.3f}"}
    workers = {}
    for chain in chains(names, manifest["recipes"]):
        log = open(run / f"{chain[-1]}.log", "w", encoding="utf-8")
        command = [sys.executable, str(Path(__file__).resolve()), "worker", str(pack / "pack"),
                   *chain, "--deadline", str(deadline), "--run-dir", str(run),
                   "--seconds", str(args.seconds), "--precision", args.precision]
        workers[chain[-1]] = (chain, log, subprocess.Popen(command, env=env, stdout=log,
                                                           stderr=subprocess.STDOUT))
    summary = {"seconds": args.seconds, "recipes": {}}
    for last, (chain, log, process) in workers.items():
        try:
            process.wait(timeout=max(deadline + GRACE_SECONDS - time.time(), 1))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        summary["recipes"][last] = _worker_result(run, chain, process.returncode)
        _return_preset(run / last, out / f"{last}.tar")
    summary["elapsed_seconds"] = round(time.time() - started, 1)
    (out / RUN_FILE).write_text(json.dumps(summary, indent=1), encoding="utf-8")
    _join_logs(run, [chain[-1] for chain, _, _ in workers.values()], out / "run.log")
    print(json.dumps(summary, indent=1))


def _check_precision(value):
    """``--precision`` as ``zoo.precision`` accepts it, or the script's one-line error
    (``zoo.precision`` imports no Keras: this runs before the wheels are installed)."""
    if str(ROOT) not in sys.path:  # run as a script where the zoo is not installed
        sys.path.insert(0, str(ROOT))
    from zoo import precision

    try:
        return precision.check(value, "--precision")
    except ValueError as error:
        raise SystemExit(f"device_run: {error}") from None


def _install_wheels(wheels, site):
    """The carried wheels installed into ``site`` (none carried: this Python has them)."""
    found = sorted(str(p) for p in wheels.glob("*.whl")) if wheels.is_dir() else []
    if not found:
        return None
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index",
                    "--no-deps", "--no-compile", "--target", str(site), *found], check=True)
    return str(site)


def _worker_result(run, chain, returncode):
    """What ``run.json`` says of a chain: its return code and each stage's record."""
    stages = {}
    for name in chain:
        metadata = run / name / "metadata.json"
        if metadata.is_file():
            training = json.loads(metadata.read_text(encoding="utf-8"))["training"]
            stages[name] = {key: training.get(key) for key in (
                "epochs_run", "best_epoch", "best_val_loss", "wall_time_seconds",
                "stopped_at_deadline", "machine")}
        else:
            stages[name] = None  # not written: its log says why
    return {"returncode": returncode, "stages": stages}


def _return_preset(directory, tar_path):
    """The preset as one file (the call returns at most 8 files, 16 MiB each)."""
    if not (directory / "metadata.json").is_file():
        return
    with tarfile.open(tar_path, "w") as tar:
        tar.add(directory, arcname=directory.name)


def _join_logs(run, names, path):
    with open(path, "w", encoding="utf-8") as joined:
        for name in names:
            joined.write(f"==> {name} <==\n{(run / f'{name}.log').read_text(encoding='utf-8')}\n")


def command_worker(args):
    """One process: the chain's recipes one after another, each written unfinished."""
    from zoo.training import driver, loop, packs

    pack = packs.read_pack(args.pack)
    start = time.time()
    deadlines = stage_deadlines(args.recipes, start, args.deadline - start)
    for name, deadline in zip(args.recipes, deadlines):
        task = packs.PackedTranslationTask(pack, name, presets_dir=args.run_dir)
        if args.precision != task.recipe.precision:  # (as written where it is the recipe's)
            task.recipe = task.recipe.replace(precision=args.precision)
        in_precision = f" --precision {args.precision}" if args.precision != "float32" else ""
        command = (f"python training/device_run.py train PACK --seconds {args.seconds}"
                   f"{in_precision} (stage {name} of {' -> '.join(args.recipes)})")
        driver.train(task.recipe, out_dir=Path(args.run_dir) / name, command=command,
                     options=loop.Options(deadline=deadline), choose_and_score=False,
                     task=task, log_dir=Path(args.run_dir) / "logs" / name)


# -- finish (CPU) --------------------------------------------------------------------------


def command_finish(args):
    """Each returned preset: decoding chosen, scored, compared with the shipped one."""
    from zoo import presets
    from zoo.training import translation

    results, verdicts = Path(args.results), {}
    for tar_path in sorted(results.glob("*.tar")):
        name = tar_path.stem
        folder = results / name
        if not folder.is_dir():
            with tarfile.open(tar_path) as tar:
                tar.extractall(results, filter="data")
        translation.retune_decoding(folder, data_dir=args.data_dir)
        verdicts[name] = translation.against_shipped(folder, name, data_dir=args.data_dir)
        print(json.dumps({name: verdicts[name]}, indent=1))
        if args.ship and verdicts[name]["ships"]:
            presets.install(folder, name)
            print(f"{name}: shipped")
    (results / "verdicts.json").write_text(json.dumps(verdicts, indent=1), encoding="utf-8")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    pack = commands.add_parser("pack", help="CPU: the training data as ids, and the wheels")
    pack.add_argument("out", help="a new folder inside the checkout, ignored by git (packs/NAME)")
    pack.add_argument("--recipes", nargs="+", default=list(RECIPES))
    pack.add_argument("--data-dir", help="default $ZOO_DATA_DIR or ../shared/data")
    pack.add_argument("--budget-mib", type=float, default=60.0)
    pack.add_argument("--no-wheels", action="store_true", help="leave the wheels out")
    pack.set_defaults(run=command_pack)
    travel = commands.add_parser("travel", help="what a device call carrying PACK sends")
    travel.add_argument("pack")
    travel.set_defaults(run=command_travel)
    train = commands.add_parser("train", help="the accelerator: every recipe side by side")
    train.add_argument("pack")
    train.add_argument("--out", required=True, help="where the presets come back ($OUT)")
    train.add_argument("--seconds", type=float, default=480,
                       help="the training's deadline, from the start of this command")
    train.add_argument("--recipes", nargs="+", help="default: every recipe in the pack")
    train.add_argument("--run-dir", default="/tmp/zoo_device_run")
    train.add_argument("--precision", default="float32", metavar="{float32,mixed_bfloat16}",
                       help="the training's arithmetic (zoo train --precision): mixed_bfloat16 "
                            "computes in bfloat16 on float32 weights; presets are float32")
    train.set_defaults(run=command_train)
    worker = commands.add_parser("worker", help="(started by train) one chain of recipes")
    worker.add_argument("pack")
    worker.add_argument("recipes", nargs="+")
    worker.add_argument("--deadline", type=float, required=True)
    worker.add_argument("--seconds", type=float, required=True)
    worker.add_argument("--run-dir", required=True)
    worker.add_argument("--precision", default="float32")
    worker.set_defaults(run=command_worker)
    finish = commands.add_parser("finish", help="CPU: choose decoding, score, compare, ship")
    finish.add_argument("results", help="the folder the train step's files came back to")
    finish.add_argument("--data-dir")
    finish.add_argument("--ship", action="store_true",
                        help="replace saved_models/NAME with each preset that beats it")
    finish.set_defaults(run=command_finish)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
