"""Kernel check and tune reports: `terminal` formats them (`--json` prints the report model itself)."""
