"""Property-based fuzzing of every input the engine accepts: the record codec, BPMN resources,
FEEL expressions and commands. The hypothesis profile is chosen with HYPOTHESIS_PROFILE (`ci` by
default, `long` for thousands of examples); see tests/support/fuzz_profiles.py."""
