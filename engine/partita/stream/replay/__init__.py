"""The replay loop of one partition: rebuilding its state from the log's EVENTs.

`state_machine` is the loop; `restorer` brings a store to the log (snapshot restore, replay
bounds) for every reader; `standby` keeps warm copies; `verify` proves replay rebuilds what
processing built.
"""
