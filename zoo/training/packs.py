"""A pack: translator recipes' training data as token ids, made on the CPU where the
corpora are, to train where they are not (an accelerator lent for minutes, with neither
the corpora nor TensorFlow: ``training/device_run.py``).

Recipes that read the same text the same way (languages, mix, vocabulary settings,
longest pair) share one text pipeline and one set of ids, whichever way they translate:
zh->en, its no-attention baseline and en->zh; en->fr and its guided first stage. For each such group a pack holds:

    GROUP/text/              the text pipeline learned on the training split (its
                             vocabularies, as a preset's assets)
    GROUP/CORPUS.npz         each corpus of the mix (Tatoeba's train split alone without
                             a mix): the kept pairs' source and target ids (uint16,
                             concatenated) and lengths, and with guided alignment the
                             pairs' (target piece, source piece) links
    GROUP/validation.npz     the validation pairs' ids (the validation loss needs no text)
    pack.json                the recipes, each corpus's pairs packed and in full, the
                             sizes of the splits, and every file's sha256

A pack is written whole or not at all (a folder renamed into place). Where it would take
more than its budget, the largest corpus is subsampled (seeded) to fit, and pack.json
records the pool: a pass then draws the recipe's share of the full corpus from the pool.
Reading a pack checks every file's sha256 first.
"""

import dataclasses
import functools
import hashlib
import io
import json
import shutil
from pathlib import Path

import numpy as np

from zoo.data import parallel, tatoeba
from zoo.files import staging_folder
from zoo.training import recipes
from zoo.training.translation import TranslationTask, rows_dataset

PACK_FILE = "pack.json"
VERSION = 1
MiB = 1024 * 1024
# What may travel to the accelerator beside the checkout: 64 MiB in all, with the code.
BUDGET_BYTES = 60 * MiB
SEED = 0  # of the subsample of a corpus too large for the budget
VALIDATION = "validation"


class PackError(ValueError):
    """A pack that cannot be written or read as asked."""


# -- which recipes share a text pipeline ---------------------------------------------------


def text_key(recipe):
    """What decides a recipe's ids, whichever way it translates: two recipes with the
    same key read their pairs into the same ids, one side's as the other's (zh->en and
    en->zh with the same pieces for each language share them; a fine-tune of
    ``initial_preset`` keeps its preset's, which shares its group where that preset's
    recipe is in the pack)."""
    vocabulary = dict(recipe.vocabulary)
    sizes = {recipe.source_language: vocabulary.pop("source_size", None),
             recipe.target_language: vocabulary.pop("target_size", None)}
    return json.dumps({
        "languages": sorted(sizes), "pieces_by_language": sizes, "vocabulary": vocabulary,
        "corpus": recipe.corpus, "mix": recipe.mix, "max_train_tokens": recipe.max_train_tokens,
        "max_source_length": recipe.model_config.get("max_source_length", 64)},
        sort_keys=True)


def text_groups(recipe_list):
    """``{group name: [recipes]}``, recipes with the same ``text_key`` together, each
    group named after its first recipe."""
    groups = {}
    for recipe in recipe_list:
        groups.setdefault(text_key(recipe), []).append(recipe)
    return {members[0].name: members for members in groups.values()}


# -- writing -------------------------------------------------------------------------------


def write_pack(recipe_names, out, data_dir=None, budget_bytes=BUDGET_BYTES, printer=print):
    """Pack the recipes ``recipe_names`` (names or ``Recipe``s) into the new folder
    ``out``; returns its ``pack.json`` as a dict. Stops with a ``PackError`` naming the
    file where a corpus is missing or differs from the copy the recipes name (sha256),
    or where the pack cannot fit ``budget_bytes``; nothing is left half-written."""
    out = Path(out)
    if out.exists():
        raise PackError(f"{out} exists: remove it, or pack into another folder.")
    recipe_list = [_translation_recipe(name) for name in recipe_names]
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = staging_folder(out.parent, prefix=f".{out.name}.")
    try:
        manifest = {"version": VERSION, "budget_bytes": budget_bytes, "recipes": {},
                    "groups": {}}
        for group, members in text_groups(recipe_list).items():
            manifest["groups"][group] = _write_group(staging / group, members, data_dir,
                                                     printer)
            for recipe in members:
                manifest["recipes"][recipe.name] = {"recipe": recipe.written, "group": group}
        _fit_budget(staging, manifest, budget_bytes, printer)
        manifest["files"] = {str(path.relative_to(staging)): sha256(path)
                             for path in sorted(staging.rglob("*")) if path.is_file()}
        (staging / PACK_FILE).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        _check_budget(staging, budget_bytes, "with its pack.json")
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    printer(f"pack written to {out}: {_size(size_of(out))}")
    return manifest


def _translation_recipe(name_or_recipe):
    recipe = recipes.from_dict(name_or_recipe) if isinstance(name_or_recipe, (dict, recipes.Recipe)) \
        else recipes.load_recipe(name_or_recipe)
    if type(recipe) is not recipes.TranslationRecipe:
        raise PackError(f"{recipe.name} is a {recipe.task} recipe; a pack holds translators' "
                        f"training pairs (translation recipes on Tatoeba or a mix).")
    return recipe


def check_corpora(recipe, data_dir=None):
    """Every file the recipe reads is there and is the copy it names (sha256): else a
    ``PackError`` that names the file."""
    language = recipe.target_language if recipe.source_language == "en" else recipe.source_language
    names = [n for n in recipe.mix or () if n != "tatoeba"]
    names += [corpus for corpus, _, _ in parallel.EVALUATION_SETS.get(language, {}).values()]
    try:
        files = [(tatoeba.corpus_path(recipe.corpus, data_dir),
                  tatoeba.CORPORA[recipe.corpus]["sha256"])]
        files += [(parallel.corpus_path(n, data_dir), parallel.CORPORA[n].sha256)
                  for n in dict.fromkeys(names)]
    except FileNotFoundError as missing:
        raise PackError(f"{recipe.name} trains or validates on a file that is missing: "
                        f"{missing}") from None
    for path, expected in files:
        if sha256(path) != expected:
            raise PackError(f"{path}: sha256 {sha256(path)} differs from {expected}, the copy "
                            f"{recipe.name} names; the pack would not be the recipe's data.")


def _write_group(folder, members, data_dir, printer):
    """One text group: its pipeline learned on the training split, each corpus's ids."""
    recipe = members[0]
    for member in members:
        check_corpora(member, data_dir)
    task = TranslationTask(recipe, data_dir=data_dir, printer=printer)
    splits = task.read_splits()
    preprocessor = task.build_preprocessor(splits)
    (folder / "text").mkdir(parents=True)
    preprocessor.save(folder / "text")
    sources, targets = splits["train"]
    sizes = task.mix_sizes if recipe.mix else {"tatoeba": len(sources)}
    guided = any(member.guided_alignment for member in members)
    links = _links(preprocessor, sources, targets, printer) if guided else None
    corpora, start = {}, 0
    for corpus, size in sizes.items():
        part = slice(start, start + size)
        corpora[corpus] = {"pairs": size, "packed": _write_rows(
            folder / f"{corpus}.npz", preprocessor, sources[part], targets[part],
            recipe.max_train_tokens, links[part] if links else None)}
        start += size
        printer(f"  {recipe.name}: {corpus} {corpora[corpus]['packed']:,} of {size:,} pairs")
    validation = _write_rows(folder / f"{VALIDATION}.npz", preprocessor, *splits[VALIDATION])
    return {"source_language": recipe.source_language, "corpora": corpora,
            "validation": validation,
            "split_sizes": {name: len(sides[0]) for name, sides in splits.items()},
            "vocabulary": {"source": len(preprocessor.source_vocabulary),
                           "target": len(preprocessor.target_vocabulary)}}


def _links(preprocessor, sources, targets, printer):
    from zoo.training import alignment

    return alignment.training_links(preprocessor, sources, targets, printer)


def _write_rows(path, preprocessor, sources, targets, max_tokens=None, links=None):
    """The pairs' ids (those ``make_dataset`` keeps: a source, at most ``max_tokens`` a
    side) as ``corpus_arrays``; returns how many were kept."""
    source_rows = preprocessor.source_rows(sources)
    target_rows = preprocessor.target_rows(targets)
    keep = [i for i, (s, t) in enumerate(zip(source_rows, target_rows))
            if s and (max_tokens is None or max(len(s), len(t)) <= max_tokens)]
    arrays = corpus_arrays([source_rows[i] for i in keep], [target_rows[i] for i in keep],
                           [sorted(links[i]) for i in keep] if links is not None else None)
    np.savez_compressed(path, **arrays)
    return len(keep)


def corpus_arrays(source_rows, target_rows, links=None):
    """Rows of ids as flat uint16 arrays and their lengths; ``links``: per pair its
    ``(target piece, source piece)`` pairs, flat, with their counts."""
    arrays = {}
    for side, rows in (("source", source_rows), ("target", target_rows)):
        arrays[f"{side}_lengths"] = np.array([len(r) for r in rows], np.int32)
        arrays[side] = np.fromiter((i for r in rows for i in r), np.uint16,
                                   count=int(arrays[f"{side}_lengths"].sum()))
    if links is not None:
        arrays["link_counts"] = np.array([len(pair) for pair in links], np.int32)
        arrays["links"] = np.array([link for pair in links for link in pair],
                                   np.uint16).reshape(-1, 2)
    return arrays


def rows_of(arrays, indices=None):
    """``(source rows, target rows, links or None)`` of ``corpus_arrays``' arrays (the
    pairs ``indices``, or all)."""
    def split(flat, lengths):
        return np.split(flat, np.cumsum(lengths)[:-1]) if len(lengths) else []

    source = split(arrays["source"], arrays["source_lengths"])
    target = split(arrays["target"], arrays["target_lengths"])
    links = None
    if "links" in arrays:
        links = [set(map(tuple, pair.tolist())) for pair in
                 split(arrays["links"].astype(np.int64), arrays["link_counts"])]
    if indices is not None:
        source, target = [source[i] for i in indices], [target[i] for i in indices]
        links = [links[i] for i in indices] if links is not None else None
    return [r.tolist() for r in source], [r.tolist() for r in target], links


def _fit_budget(staging, manifest, budget_bytes, printer):
    """Subsample the largest corpus file (seeded, pairs kept in order) so that the pack
    takes at most ``budget_bytes``; a ``PackError`` where even that cannot fit."""
    # pack.json, written last, counts too (with its files' sha256 and a pool's record)
    files = {str(p.relative_to(staging)): "0" * 64 for p in staging.rglob("*") if p.is_file()}
    manifest_bytes = len(json.dumps({**manifest, "files": files}, indent=1)) + 200
    if size_of(staging) + manifest_bytes <= budget_bytes:
        return
    corpus_files = [path for path in staging.rglob("*.npz") if path.stem != VALIDATION]
    largest = max(corpus_files, key=lambda path: path.stat().st_size)
    room = budget_bytes - manifest_bytes - (size_of(staging) - largest.stat().st_size)
    if room <= 0:
        raise PackError(f"The pack takes {_size(size_of(staging) + manifest_bytes)}, over its "
                        f"budget of {_size(budget_bytes)}, even without {largest.name}: "
                        f"{_largest_files(staging)}.")
    with np.load(largest) as stored:
        arrays = dict(stored)
    pairs = pool = len(arrays["source_lengths"])
    empty = io.BytesIO()  # an npz's own bytes (its zip's headers), whatever its pairs
    np.savez_compressed(empty, **corpus_arrays(*rows_of(arrays, [])))
    fixed = len(empty.getvalue())
    while largest.stat().st_size > room and pool:  # nearly proportional: once or twice
        pool = int(pool * max(room - fixed, 0) / (largest.stat().st_size - fixed) * 0.98)
        chosen = np.sort(np.random.default_rng(SEED).choice(pairs, pool, replace=False))
        np.savez_compressed(largest, **corpus_arrays(*rows_of(arrays, chosen)))
    record = manifest["groups"][largest.parent.name]["corpora"][largest.stem]
    record["pool"] = {"pairs": pool, "seed": SEED}  # of the record's "packed" pairs
    printer(f"  {largest.parent.name}/{largest.name}: {pool:,} of its {pairs:,} pairs kept "
            f"to fit the budget of {_size(budget_bytes)}")
    _check_budget(staging, budget_bytes - manifest_bytes, f"after subsampling {largest.name}")


def _check_budget(folder, budget_bytes, when):
    if size_of(folder) > budget_bytes:
        raise PackError(f"The pack takes {_size(size_of(folder))} {when}, over its budget of "
                        f"{_size(budget_bytes)}: {_largest_files(folder)}.")


def _largest_files(folder):
    files = sorted(folder.rglob("*"), key=lambda p: -p.stat().st_size if p.is_file() else 0)
    return ", ".join(f"{p.relative_to(folder)} {_size(p.stat().st_size)}"
                     for p in files[:3] if p.is_file())


def _size(count):
    return f"{count / MiB:.1f} MiB" if count >= MiB / 10 else f"{count / 1024:.1f} KiB"


def size_of(folder):
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# -- reading -------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Pack:
    """A pack read back, its files checked (``read_pack``)."""

    directory: Path
    manifest: dict

    def recipe(self, name):
        """The typed recipe ``name`` as packed."""
        if name not in self.manifest["recipes"]:
            raise PackError(f"{self.directory} packs no recipe {name!r}; it packs "
                            f"{', '.join(self.manifest['recipes'])}.")
        return recipes.from_dict(self.manifest["recipes"][name]["recipe"])

    def group_of(self, name):
        return self.manifest["recipes"][name]["group"]

    def arrays(self, group, corpus):
        with np.load(self.directory / group / f"{corpus}.npz") as stored:
            return dict(stored)


def read_pack(directory):
    """The pack in ``directory``, every file's sha256 checked against ``pack.json``."""
    directory = Path(directory)
    if not (directory / PACK_FILE).is_file():
        raise PackError(f"{directory} holds no {PACK_FILE}: not a pack (training/device_run.py "
                        f"pack writes one).")
    manifest = json.loads((directory / PACK_FILE).read_text(encoding="utf-8"))
    if manifest.get("version") != VERSION:
        raise PackError(f"{directory} is a pack of version {manifest.get('version')}; this "
                        f"zoo reads version {VERSION}: pack it again.")
    for name, expected in manifest["files"].items():
        path = directory / name
        if not path.is_file() or sha256(path) != expected:
            raise PackError(f"{path}: {'missing' if not path.is_file() else 'sha256 differs'} "
                            f"from the pack's record; the pack is damaged: pack it again.")
    return Pack(directory, manifest)


class PackedTranslationTask(TranslationTask):
    """A translation recipe trained from a pack's ids (``driver.train(task=...)``): the
    splits are id rows, the text pipeline is the pack's, a pass draws each corpus's
    share of the full corpus from its pool. ``presets_dir``: where earlier stages were
    written (a recipe's ``initial_preset`` is looked up there first)."""

    def __init__(self, pack, name, presets_dir=None, printer=print):
        super().__init__(pack.recipe(name), printer=printer)
        self.pack, self.group = pack, pack.group_of(name)
        self.group_record = pack.manifest["groups"][self.group]
        # The group's ids were written the other way round (a zh->en group for en->zh).
        self.reversed = self.recipe.source_language != self.group_record["source_language"]
        self.presets_dir = Path(presets_dir) if presets_dir else None
        self.mix_sizes = {corpus: record["pairs"]
                          for corpus, record in self.group_record["corpora"].items()}

    @property
    def data_name(self):
        return f"pack {self.pack.directory.name}, group {self.group}"

    def read_splits(self):
        """``{"train": rows, "validation": rows}``; ``self.pools``: each corpus's share."""
        train_source, train_target, train_links, self.pools = [], [], [], []
        for corpus, record in self.group_record["corpora"].items():
            source, target, links = self._rows(corpus)
            train_source += source
            train_target += target
            train_links += links if links is not None else [set()] * len(source)
            self.pools.append((len(source), self._weight_of_pool(corpus, record)))
        self.links = train_links if self.recipe.guided_alignment else None
        validation = self._rows(VALIDATION)[:2]
        return {"train": (train_source, train_target), VALIDATION: validation}

    def _rows(self, name):
        """``rows_of`` a file of the group, in this recipe's direction."""
        source, target, links = rows_of(self.pack.arrays(self.group, name))
        if not self.reversed:
            return source, target, links
        if links is not None:
            links = [{(s, t) for t, s in pair} for pair in links]
        return target, source, links

    def _weight_of_pool(self, corpus, record):
        """A pass takes ``weight`` times the corpus's pairs: from a subsampled pool,
        that many of the full corpus's (so many more times each pooled pair)."""
        weight = (self.recipe.mix or {"tatoeba": 1})[corpus]
        pool = record.get("pool")
        return weight * record["packed"] / pool["pairs"] if pool else weight

    def split_sizes(self, splits):
        """The sizes of the splits the pack was made from (test included)."""
        return dict(self.group_record["split_sizes"])

    def build_preprocessor(self, splits):
        from zoo.text import TranslationPreprocessor

        text = TranslationPreprocessor.from_directory(self.pack.directory / self.group / "text")
        if not self.reversed:
            return text
        return TranslationPreprocessor(
            text.target_language, text.source_language, text.target_vocabulary,
            text.source_vocabulary, text.max_source_length, subwords=text.subwords)

    @functools.cached_property
    def initial_preset(self):
        name = self.recipe.initial_preset
        if name and self.presets_dir and (self.presets_dir / name).is_dir():
            import zoo

            self.printer(f"starting from {self.presets_dir / name}")
            return zoo.load(self.presets_dir / name)
        return super().initial_preset

    def datasets(self, model, splits, seed):
        recipe = self.recipe
        train = rows_dataset(*splits["train"], recipe.batch_size, shuffle=True,
                             max_tokens=recipe.max_train_tokens, seed=seed, links=self.links,
                             mix=self.pools, length_buckets=recipe.batch_widths())
        validation = rows_dataset(*splits[VALIDATION], recipe.batch_size, shuffle=False,
                                  length_buckets=recipe.batch_widths())
        return train, validation

    def mix_description(self, splits):
        """The mix as the pack holds it: each corpus's pairs, those packed, and the pool
        a subsampled corpus was drawn from."""
        description = super().mix_description(splits)
        for corpus, record in self.group_record["corpora"].items():
            if corpus in description["mix"]:
                description["mix"][corpus]["packed"] = record["packed"]
                if "pool" in record:
                    description["mix"][corpus]["pool"] = record["pool"]
        return description
