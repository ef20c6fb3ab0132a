"""`zoo benchmark`: its options reach the benchmarks; its usage errors."""

from unittest import mock

import pytest

from zoo import cli
from zoo.benchmarks import layers

from commandline import run_zoo


def test_the_remeasure_flag_reaches_the_layers_benchmark():
    with mock.patch.object(layers, "benchmark_layers", return_value=[]) as benchmark_layers:
        assert cli.main(["benchmark", "layers", "--remeasure", "--batch", "2"]) == 0
        assert cli.main(["benchmark", "layers"]) == 0
    assert benchmark_layers.call_args_list == [mock.call(batch=2, remeasure=True),
                                               mock.call(remeasure=False)]


@pytest.mark.slow
def test_benchmark_usage_errors():
    result = run_zoo("benchmark", "translate")
    assert (result.returncode, result.stderr) == (
        2, "zoo: error: zoo benchmark translate needs a preset name.\n")
    result = run_zoo("benchmark", "layers", "--batch", "0")
    assert (result.returncode, result.stderr) == (
        2, "zoo: error: --batch must be a positive number of sequences; got 0.\n")
