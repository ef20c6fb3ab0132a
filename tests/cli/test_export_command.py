"""`zoo export`: the files and our line only; refusals in one line."""

import pytest

from commandline import one_line_error, run_zoo


@pytest.mark.slow
def test_export_writes_the_files_and_nothing_but_our_line(toy_preset, tmp_path):
    result = run_zoo("export", toy_preset, "--format", "tflite", "--quantize", "dynamic",
                     "--out", tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (f"tflite export of {toy_preset} written to "
                             f"{tmp_path / (toy_preset.name + '.tflite')}\n")
    assert result.stderr == ""  # the converter's notes are filtered
    assert (tmp_path / f"{toy_preset.name}.json").is_file()


def test_export_refuses_in_one_line(toy_preset, tmp_path, capsys):
    import json
    import shutil

    from zoo import presets
    from zoo.cli import main

    existing = tmp_path / "exports" / toy_preset.name / "1"
    existing.mkdir(parents=True)
    assert main(["export", str(toy_preset), "--format", "saved_model", "--out",
                 str(tmp_path / "exports")]) == 2
    one_line_error(capsys, f"{existing} already exists; remove it or choose another --out.")

    a_file = tmp_path / "file.txt"
    a_file.write_text("")
    assert main(["export", str(toy_preset), "--format", "saved_model", "--out",
                 str(a_file / "exports")]) == 2
    one_line_error(capsys, f"cannot write into --out {a_file / 'exports'}: Not a directory.")

    absurd = tmp_path / "absurd"
    shutil.copytree(toy_preset, absurd)
    config = json.loads((absurd / "config.json").read_text())
    config["config"]["units"] = 10**9
    (absurd / "config.json").write_text(json.dumps(config))
    metadata = json.loads((absurd / "metadata.json").read_text())
    metadata["files"]["config.json"] = presets.sha256(absurd / "config.json")
    (absurd / "metadata.json").write_text(json.dumps(metadata))
    assert main(["export", str(absurd), "--format", "tflite", "--out",
                 str(tmp_path / "exports")]) == 2
    one_line_error(capsys, f"{absurd / 'config.json'} gives units = 1,000,000,000; the most "
                            "zoo loads is 4,096 (zoo.presets.CONFIG_LIMITS, docs/bad_input.md). "
                            "Refusing to build it.")


@pytest.mark.slow
def test_export_usage_errors(toy_preset, tmp_path):
    result = run_zoo("export", toy_preset, "--format", "saved_model", "--quantize", "dynamic",
                     "--out", tmp_path)
    assert (result.returncode, result.stderr) == (
        2, "zoo: error: --quantize applies to --format tflite only.\n")
