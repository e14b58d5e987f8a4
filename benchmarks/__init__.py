"""Side-by-side benchmarks of Hyperspace for Spark 4 (``python -m benchmarks``, ``make bench``).

Every suite runs its variants interleaved in one SparkSession (on, off, tuned, on, off, ...),
discards a warm-up run, reports medians and min–max of several runs, and checks that every
variant returns the same rows. Suites register themselves in :mod:`benchmarks.suites`.
"""
