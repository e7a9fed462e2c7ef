"""Helpers for the remote-execution tests: real sshd processes on loopback, a fake Cloud TPU API."""
