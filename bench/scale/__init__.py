"""``bench.scale``: a whole cluster at 1k, 5k and 10k partitions (issue 15).

``python -m bench.scale --partitions 1000,5000,10000`` (also ``pafka bench scale``, ``make
bench-scale``). For each partition count a fresh LocalCluster (RF 3, 3 brokers, 2 controllers)
is created and measured phase by phase (:mod:`bench.scale.phases`), every phase bounded by a
deadline; the figures, issue 15's targets beside them and plots against N land in
``bench/results/scale-<UTC time>/``. ``stats``, ``targets`` and ``report`` are pure.
"""
