"""Run requests on a terminal."""
