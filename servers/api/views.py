"""JSON endpoints of the server registry. The internal administration API lives in `internal.py`."""
