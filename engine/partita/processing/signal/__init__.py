"""Signals: SIGNAL BROADCAST reaches every partition, where what waits for the signal by name
catches it (SIGNAL_SUBSCRIPTION: catch, boundary and event subprocess start events of element
instances; signal start events of processes, on partition 0)."""
