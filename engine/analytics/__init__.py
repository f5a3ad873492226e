"""Downstream analytics: a faust-streaming app that folds the log's EVENTs into tables and
serves process, element, job and incident figures as JSON and a live HTML page.

Depends on `engine.protocol` only. `appliers` folds events into tables, `histogram` keeps
mergeable duration histograms, `views` merges the per-partition tables into the served JSON,
`app` wires them into faust, `dashboard` is the page.
"""
