"""The variable domain: variables of element instances.

- `processors`: VARIABLE_DOCUMENT UPDATE (variables set from outside);
- `appliers`: VARIABLE CREATED and UPDATED;
- `state`: variables by scope and name, and what an element sees.

Setting variables from inside the engine (creation, job completion, mappings, events) is
`behavior.variables`.
"""
