"""``zoo benchmark serve``: a SavedModel's signature called from concurrent threads."""

import time

import numpy as np

from zoo import backend


def _serving_texts(name, data_dir=None):
    """Request texts for a preset whose SavedModel takes ``texts``: its test split."""
    from zoo.evaluation import splits
    from zoo.models import preset_model

    kind = preset_model.preset_kind(name)
    if kind == "classifier":
        from zoo.data import sst2

        return sst2.read(data_dir)["test"][0]
    if kind == "language_model":
        raise ValueError(f"zoo benchmark serve measures presets served with texts in "
                         f"(translators, classifiers); {name} is a language model.")
    return splits.preset_splits(name, data_dir)["test"][0]


def concurrent_requests(serve, texts, concurrency, requests):
    """Send ``requests`` one-text requests from ``concurrency`` threads.

    Returns ``(answers in request order, latencies in seconds, wall seconds)``.
    """
    from concurrent.futures import ThreadPoolExecutor

    def timed(text):
        start = time.perf_counter()
        answer = serve(text)
        return answer, time.perf_counter() - start

    batch = [texts[i % len(texts)] for i in range(requests)]
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(timed, batch))
    return [a for a, _ in results], [t for _, t in results], time.perf_counter() - started


def benchmark_serve(name, requests=200, concurrency=(1, 4, 16), data_dir=None, printer=print):
    """Throughput and p50/p99 latency of the SavedModel's ``serving_default`` signature
    called from 1, 4 and 16 threads, one text per request (as TF Serving would see
    independent clients). The answers are checked equal to sequential calls."""
    backend.require_tensorflow("zoo benchmark serve")
    import tensorflow as tf

    import tempfile

    from zoo import export

    texts = _serving_texts(name, data_dir)
    with tempfile.TemporaryDirectory() as directory:
        signature = tf.saved_model.load(
            str(export.export(name, "saved_model", directory))).signatures["serving_default"]
        output = next(iter(signature.structured_outputs))  # translations, or labels

        def serve(text):
            return signature(texts=tf.constant([text]))[output].numpy()[0].decode("utf-8")

        expected, _, _ = concurrent_requests(serve, texts, 1, min(requests, len(texts)))
        printer(f"{name}: SavedModel serving_default, {requests} requests of one text each, "
                f"{tf.config.threading.get_inter_op_parallelism_threads() or 'default'} "
                f"inter-op threads")
        printer(f"{'threads':>8}{'requests/s':>12}{'p50 ms':>9}{'p99 ms':>9}")
        results = {}
        for workers in concurrency:
            answers, latencies, seconds = concurrent_requests(serve, texts, workers, requests)
            wrong = sum(a != expected[i % len(expected)] for i, a in enumerate(answers))
            if wrong:
                raise RuntimeError(f"{wrong} of {requests} answers from {workers} threads "
                                   "differ from sequential calls.")
            p50, p99 = np.percentile(latencies, [50, 99]) * 1000
            results[workers] = {"requests_per_second": round(requests / seconds, 1),
                                "p50_ms": round(float(p50), 1), "p99_ms": round(float(p99), 1)}
            printer(f"{workers:>8}{requests / seconds:>12.1f}{p50:>9.1f}{p99:>9.1f}")
    return {"preset": name, "requests": requests, "concurrency": results}
