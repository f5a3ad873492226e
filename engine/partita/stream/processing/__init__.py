"""The processing loop of one partition: a batch of commands from the log and the ingress
topic, admitted, processed, written in one Kafka transaction, then applied to state.

`state_machine` runs the loop; the other modules are its steps, in order: `log_commands` and
`admission` (what to process), `commands` (running one), `sizes`, `failures`, `replies`,
`backpressure`, then `transaction` (the Kafka transaction), `landing`, `provisional`,
`own_records` and `offset_commits` (where its records land and what is committed).
"""
