"""Tools for operators: a readable live view of the log (`tail`) and the state of a deployment
(`status`). They read Kafka only and never write."""
