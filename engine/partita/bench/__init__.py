"""Benchmark commands (`partita bench ...`). Each prints one JSON line of measured figures."""
