"""`ask` answers and `kb` build and status reports: `terminal` formats them (`--json` prints the models)."""
