"""The incident domain: an element or a job that cannot go on (a failing expression, a job out
of retries, an uncaught error) has an incident until INCIDENT RESOLVE lets it continue.

- `processors`: INCIDENT RESOLVE;
- `appliers`: INCIDENT CREATED and RESOLVED;
- `state`: incidents by key and by element instance.

Incidents are raised by `behavior.incidents`, from whichever domain hit the problem.
"""
