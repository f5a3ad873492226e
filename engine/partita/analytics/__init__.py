"""Downstream analytics: a faust-streaming app that folds the log's EVENTs into tables and
serves process, element, job and incident figures as JSON and a live HTML page.

`appliers` folds events into tables, `histogram` keeps mergeable duration histograms, `views`
merges the per-partition tables into the served JSON; these depend on `partita.protocol` only.
`app` wires them into faust with the analytics role's Kafka access, which `credentials`
translates to faust's settings; `web_token` guards the page, `dashboard` is the page. `export`
is `partita export`, the log's events republished as JSON.
"""
