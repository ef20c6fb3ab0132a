"""Presets: named, pretrained models stored as data in ``saved_models/NAME/``.

A preset directory holds

    config.json         the model's Keras config (``keras.saving.serialize_keras_object``)
    model.weights.h5    its weights
    assets/             vocabularies and other files the model reads (``save_assets``)
    metadata.json       task, data, metrics, parameter count, how it was trained, and
                        the sha256 of every other file
    README.md           the model card

This module is the format: where presets are, their files, checksums and limits, and
saving one atomically. Loading builds a model (``zoo.load``, which is
``zoo.models.preset_model.load``) and never executes code from the directory:
``read_verified`` checks every checksum and the config's sizes before anything is
built, the config is deserialized with Keras safe mode on (no ``Lambda`` layers, only
registered classes), and nothing is unpickled. A ``.keras`` file
(``model.save("x.keras")``) loads the same way, except that it carries no checksums.
"""

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

from zoo import precision
from zoo.decoding import arguments
from zoo.files import staging_folder
from zoo.text import codec

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.weights.h5"
METADATA_FILE = "metadata.json"
CARD_FILE = "README.md"
ASSETS_DIR = "assets"

# A preset name: lower-case words joined by underscores, nothing that walks paths.
_NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_]*$")

# The largest sizes a preset's config may give, checked before anything is built: a
# config is data anyone may share, and Keras allocates every weight it names (units of
# 10**9 is an OOM, not an error). Each is several times the largest shipped preset's
# (in brackets), so that bigger honest models still load, and together they bound what
# one config can allocate (docs/bad_input.md gives the figures).
CONFIG_LIMITS = {
    # recurrent state [430: rnn_charlm_shakespeare]; Keras' Dense and the attention too
    "units": 4_096, "attention_units": 4_096,
    # token embeddings [256]; Keras' Embedding calls it output_dim
    "embedding_dim": 2_048, "output_dim": 2_048,
    # vocabularies [14,135: bilstm_sst2]; Keras' Embedding calls it input_dim
    "vocabulary_size": 100_000, "source_vocabulary_size": 100_000,
    "target_vocabulary_size": 100_000, "input_dim": 100_000,
    # stacked recurrent layers [2]
    "num_layers": 8,
    # decoding buffers [64]: the limit of translate(max_length=...)
    "max_output_length": arguments.MAX_OUTPUT_LENGTH,
    # tokens read [128]: a text has at most MAX_TEXT_LENGTH characters, so no more tokens
    "max_source_length": codec.MAX_TEXT_LENGTH, "max_length": codec.MAX_TEXT_LENGTH,
}


class PresetError(ValueError):
    """A preset cannot be found, verified or loaded."""


def presets_root():
    """The folder of the presets that ship with zoo: ``saved_models/`` at the top of the
    repository, installed inside the package as ``zoo/saved_models`` (pyproject.toml's
    package-dir) by a regular install."""
    package_dir = Path(__file__).resolve().parent
    installed = package_dir / "saved_models"
    return installed if installed.is_dir() else package_dir.parent / "saved_models"


def list_models():
    """Names of the presets that ship with zoo, sorted."""
    root = presets_root()
    if not root.is_dir():
        return []
    # A save interrupted between its renames left NAME as .NAME.old (_replace).
    names = {p.name.removeprefix(".").removesuffix(".old") for p in root.iterdir()}
    return sorted(name for name in names if _NAME_PATTERN.match(name)
                  and (_interrupted_save(root / name) / METADATA_FILE).is_file())


def resolve(name_or_directory):
    """The directory of a preset given by name, or a directory given by path."""
    if isinstance(name_or_directory, os.PathLike) or os.sep in str(name_or_directory):
        directory = _interrupted_save(Path(name_or_directory))
        if not directory.is_dir():
            raise PresetError(f"Preset directory not found: {str(directory)!r}.")
        return directory
    name = str(name_or_directory)
    if not _NAME_PATTERN.match(name):
        raise PresetError(
            f"Invalid preset name {name!r}: a name is lower-case letters, digits and "
            "underscores (to load a directory, pass its path). "
            f"Known presets: {', '.join(list_models()) or 'none'}."
        )
    directory = _interrupted_save(presets_root() / name)
    if not (directory / METADATA_FILE).is_file():
        raise PresetError(
            f"Unknown preset {name!r}. Known presets: {', '.join(list_models()) or 'none'}."
        )
    return directory


def _interrupted_save(directory):
    """``directory``, or where a save killed between its two renames left the preset
    (``_replace``)."""
    retired = _retired(directory)
    if not directory.exists() and (retired / METADATA_FILE).is_file():
        return retired
    return directory


def describe(name_or_directory):
    """The preset's metadata.json as a dict."""
    return _read_metadata(resolve(name_or_directory))


def _read_metadata(directory):
    path = directory / METADATA_FILE
    if not path.is_file():
        raise PresetError(f"Preset {str(directory)!r} has no {METADATA_FILE}.")
    return _read_json(path.read_bytes(), path)


def _read_json(content, source):
    try:
        return json.loads(content.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise PresetError(f"{source} is not valid JSON: {error}.") from None


def check_config_sizes(config, source):
    """Refuse a config that gives any size of ``CONFIG_LIMITS`` beyond its limit, at any
    depth (a plain Keras model's layers too), before Keras builds (allocates) anything."""
    if isinstance(config, dict):
        for key, value in config.items():
            most = CONFIG_LIMITS.get(key)
            if (most is not None and isinstance(value, (int, float))
                    and not isinstance(value, bool) and value > most):
                raise PresetError(
                    f"{source} gives {key} = {value:,}; the most zoo loads is {most:,} "
                    f"(zoo.presets.CONFIG_LIMITS, docs/bad_input.md). Refusing to build it.")
            check_config_sizes(value, source)
    elif isinstance(config, list):
        for item in config:
            check_config_sizes(item, source)


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:  # hashlib.file_digest is Python 3.11 and newer
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def verify(directory, metadata):
    """Check that every file of the preset is listed in the metadata with its checksum,
    exists and has that checksum."""
    files = metadata.get("files")
    if not files or WEIGHTS_FILE not in files or CONFIG_FILE not in files:
        raise PresetError(
            f"{directory / METADATA_FILE} lists no checksums for {CONFIG_FILE} and "
            f"{WEIGHTS_FILE}; refusing to load unverified files."
        )
    unlisted = sorted(str(path.relative_to(directory)) for path in directory.rglob("*")
                      if path.is_file() and path.name != METADATA_FILE
                      and str(path.relative_to(directory)) not in files)
    if unlisted:
        raise PresetError(
            f"Preset {directory.name!r} holds files that {METADATA_FILE} lists no checksum "
            f"for: {', '.join(unlisted)}; refusing to load unverified files.")
    for relative, expected in files.items():
        path = (directory / relative).resolve()
        if directory.resolve() not in path.parents:
            raise PresetError(f"{METADATA_FILE} names a file outside the preset: {relative!r}.")
        if not path.is_file():
            raise PresetError(f"Preset {directory.name!r} is missing the file {relative!r}.")
        actual = sha256(path)
        if actual != expected:
            raise PresetError(
                f"Checksum mismatch for {relative!r} in preset {directory.name!r}: expected "
                f"sha256 {expected}, found {actual}. The file was modified or corrupted."
            )


def read_verified(name_or_directory):
    """A preset's folder, metadata and config, every file's checksum verified and the
    config's sizes checked: all that is read before a model is built
    (``zoo.models.preset_model.load`` builds it)."""
    directory = resolve(name_or_directory)
    metadata = _read_metadata(directory)
    verify(directory, metadata)
    config = _read_json((directory / CONFIG_FILE).read_bytes(), directory / CONFIG_FILE)
    check_config_sizes(config, directory / CONFIG_FILE)
    return directory, metadata, config


def check_keras_file(path):
    """The checks a ``.keras`` file (``model.save("x.keras")``) gets before Keras reads
    it: a zip archive, with a config whose sizes are in bounds. It has no checksums to
    verify (a preset has: prefer ``zoo.presets.save`` for files that travel)."""
    import zipfile

    path = Path(path)
    if not path.is_file():
        raise PresetError(f"No such .keras file: {str(path)!r}.")
    if not zipfile.is_zipfile(path):
        raise PresetError(f"{path} is not a .keras file (a zip archive): it is truncated or "
                          "of another format.")
    with zipfile.ZipFile(path) as archive:
        if CONFIG_FILE not in archive.namelist():
            raise PresetError(f"{path} holds no {CONFIG_FILE}: it is not a Keras model file.")
        source = f"{path} ({CONFIG_FILE})"
        check_config_sizes(_read_json(archive.read(CONFIG_FILE), source), source)


def model_class_name(name):
    """The class a shipped preset's config.json builds (its registered name is ``zoo>NAME``)."""
    config = json.loads((resolve(name) / CONFIG_FILE).read_text(encoding="utf-8"))
    return str(config.get("registered_name") or config.get("class_name")).rpartition(">")[2]


def save(model, directory, metadata=None, card=None, weights_dtype="float32"):
    """Write ``model`` as a preset directory, atomically.

    Everything is written to a temporary folder next to ``directory`` and renamed
    into place at the end, so a crash never leaves a half-written preset.
    ``metadata`` (task, data, metrics, training) is completed with the parameter
    count and the files' checksums; ``card`` is the README.md text (a short one
    is generated from the metadata when omitted). ``weights_dtype="float16"``
    stores float32 weights at half the size (they load back as float32). The
    optimizer's state is not part of a preset. A model trained in mixed precision is
    saved as its float32 copy (``precision.copy_in``): a preset is float32.
    """
    import keras

    model = precision.copy_in(model, "float32")

    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = staging_folder(directory.parent, prefix=f".{directory.name}.")
    try:
        config = keras.saving.serialize_keras_object(model)
        # A preset is an architecture and weights; how to train it is the user's
        # choice (a compiled model's optimizer would be rebuilt on every load).
        config.pop("compile_config", None)
        (staging / CONFIG_FILE).write_text(json.dumps(config, indent=1), encoding="utf-8")
        if weights_dtype not in ("float32", "float16"):
            raise ValueError(
                f"weights_dtype must be 'float32' or 'float16'; received {weights_dtype!r}."
            )
        model.save_weights(staging / WEIGHTS_FILE)
        _strip_weights_file(staging / WEIGHTS_FILE, to_float16=weights_dtype == "float16")
        if hasattr(model, "save_assets"):
            (staging / ASSETS_DIR).mkdir()
            model.save_assets(str(staging / ASSETS_DIR))
        metadata = dict(metadata or {})
        metadata.setdefault("name", directory.name)
        metadata["parameters"] = int(model.count_params())
        (staging / CARD_FILE).write_text(card or _default_card(metadata), encoding="utf-8")
        metadata["files"] = {
            str(path.relative_to(staging)): sha256(path)
            for path in sorted(staging.rglob("*"))
            if path.is_file()
        }
        metadata["size_bytes"] = sum((staging / f).stat().st_size for f in metadata["files"])
        (staging / METADATA_FILE).write_text(
            json.dumps(metadata, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        _replace(directory, staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return directory


def install(directory, name):
    """Copy the preset in ``directory`` (verified) into the shipped presets as ``name``,
    in place of the one there (atomically, as ``save`` replaces); returns its folder."""
    directory = Path(directory)
    metadata = describe(directory)
    verify(directory, metadata)
    if metadata.get("name") != name:
        raise PresetError(f"{directory} holds the preset {metadata.get('name')!r}, not "
                          f"{name!r}.")
    root = presets_root()
    staging = staging_folder(root, prefix=f".{name}.")
    shutil.rmtree(staging)
    shutil.copytree(directory, staging)
    _replace(root / name, staging)
    return root / name


def _retired(directory):
    """Where ``_replace`` moves a preset aside while the new one takes its place."""
    return directory.with_name(f".{directory.name}.old")


def _replace(directory, staging):
    """Rename a written folder into the place of a preset (the old one, if any, moves
    aside first and is removed after).

    POSIX has no rename of a folder over another that is not empty: between the two
    renames the preset is only at ``.NAME.old``, and a process killed there (SIGKILL,
    power loss) leaves it so. ``resolve`` then loads ``.NAME.old`` (the preset as it was
    before the interrupted save), and the next save of NAME removes it.
    """
    retired = _retired(directory)
    if directory.exists():
        shutil.rmtree(retired, ignore_errors=True)
        directory.rename(retired)
    staging.rename(directory)
    shutil.rmtree(retired, ignore_errors=True)


def _strip_weights_file(path, to_float16):
    """Keep only the model's own weights in a Keras weights file, optionally as float16.

    A compiled model's ``save_weights`` also writes the optimizer's slots (twice the
    model's size for Adam), which a preset does not need. The file is written anew
    (HDF5 does not give back the space of deleted arrays). Arrays of more than a few
    values are stored with HDF5's byte shuffle and gzip, which every h5py reads
    (``load_weights`` sees the same values): the shipped float16 presets' weights were
    7-11% smaller so, a margin that saved_models' 48 MB needs.
    """
    import h5py
    import numpy as np

    stripped = path.with_suffix(".stripped.h5")
    with h5py.File(path, "r") as source, h5py.File(stripped, "w") as target:
        target.attrs.update(source.attrs)

        def copy(name, item):
            if name.split("/")[0] == "optimizer":
                return
            if isinstance(item, h5py.Group):
                target.require_group(name).attrs.update(item.attrs)
            else:
                values = item[()]
                if to_float16 and item.dtype == np.float32:
                    values = values.astype(np.float16)
                compressed = ({"compression": "gzip", "compression_opts": 9, "shuffle": True}
                              if values.size >= 1024 else {})
                target.create_dataset(name, data=values, **compressed).attrs.update(item.attrs)

        source.visititems(copy)
    stripped.replace(path)


def rewrite_description(directory, metadata, card, config_changes=None):
    """Rewrite a preset's metadata and model card only (and, with ``config_changes``,
    those arguments of its model's config, such as a re-chosen ``length_penalty``): for
    scores measured after training, so the weights stay the bytes that training wrote."""
    directory = Path(directory)
    # Both files in a copy renamed into place, as ``save`` does: a crash between the two
    # writes would leave a card its checksum does not match.
    staging = staging_folder(directory.parent, prefix=f".{directory.name}.")
    shutil.rmtree(staging)
    shutil.copytree(directory, staging)
    (staging / CARD_FILE).write_text(card, encoding="utf-8")
    files = {**metadata["files"], CARD_FILE: sha256(staging / CARD_FILE)}
    if config_changes:
        config = json.loads((staging / CONFIG_FILE).read_text(encoding="utf-8"))
        config["config"].update(config_changes)
        (staging / CONFIG_FILE).write_text(json.dumps(config, indent=1), encoding="utf-8")
        files[CONFIG_FILE] = sha256(staging / CONFIG_FILE)
    metadata = dict(metadata, files=files)
    metadata["size_bytes"] = sum((staging / f).stat().st_size for f in metadata["files"])
    (staging / METADATA_FILE).write_text(
        json.dumps(metadata, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    _replace(directory, staging)
    return metadata


def _default_card(metadata):
    lines = [f"# {metadata['name']}", ""]
    if "description" in metadata:
        lines += [metadata["description"], ""]
    lines.append(f"Parameters: {metadata['parameters']:,}")
    return "\n".join(lines) + "\n"
