"""The benchmarks (``bench.compare``, ``bench.scale``) come with the ``bench`` extra, imported
only when a benchmark runs; one message when they cannot be."""

from __future__ import annotations

from pafka.errors import ConfigError


def missing(exc: ImportError) -> ConfigError:
    return ConfigError(f"the benchmark needs the bench extra (pip install 'pafka[bench]'): {exc}")
